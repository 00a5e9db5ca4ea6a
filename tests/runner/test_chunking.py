from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest

from nvq_runner.artifact_tree import (
    ArtifactTree,
    TreeEntry,
    TreeError,
    check_tree,
    decode_tree,
    encode_tree,
    scan,
)
from nvq_runner.chunking import MAX_CHUNK, MIN_CHUNK, chunks, cut_points, digest


def random_bytes(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


def test_streamed_chunks_equal_cutting_the_whole() -> None:
    data = random_bytes(24 * 1024 * 1024)
    pieces = list(chunks(io.BytesIO(data)))
    assert b"".join(pieces) == data
    ends, at = [], 0
    for piece in pieces:
        at += len(piece)
        ends.append(at)
    assert ends == cut_points(data)
    assert all(MIN_CHUNK <= len(p) <= MAX_CHUNK for p in pieces[:-1])


def test_data_without_the_marker_falls_back_to_fixed_chunks() -> None:
    pieces = list(chunks(io.BytesIO(b"\0" * (3 * MAX_CHUNK + 5))))
    assert [len(p) for p in pieces] == [MAX_CHUNK] * 3 + [5]


def shared(a: bytes, b: bytes) -> float:
    """Fraction of b's bytes in chunks that a already has."""
    have = {digest(p) for p in chunks(io.BytesIO(a))}
    new = list(chunks(io.BytesIO(b)))
    return sum(len(p) for p in new if digest(p) in have) / len(b)


def test_an_insertion_shifts_only_the_chunks_around_it() -> None:
    data = random_bytes(16 * 1024 * 1024)
    edited = data[:5_000_000] + b"inserted" * 100 + data[5_000_000:]
    assert shared(data, edited) > 0.9


def test_a_one_percent_rewrite_keeps_most_chunks() -> None:
    data = random_bytes(32 * 1024 * 1024)
    start = len(data) // 2
    span = len(data) // 100
    edited = data[:start] + random_bytes(span, seed=2) + data[start + span:]
    assert shared(data, edited) > 0.95


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_scan_describes_files_and_rereads_only_what_changed(tmp_path: Path) -> None:
    root = tmp_path / "a"
    write(root / "ckpt" / "1.pt", random_bytes(3 * 1024 * 1024, 1))
    write(root / "ckpt" / "2.pt", random_bytes(3 * 1024 * 1024, 2))
    write(root / "latest", b"2\n")
    write(root / ".sync", b"")
    first = scan(root)
    assert [e.path for e in first.tree.entries] == ["ckpt", "ckpt/1.pt", "ckpt/2.pt", "latest"]
    assert first.bytes_read == 6 * 1024 * 1024 + 2
    assert first.tree.total_size() == first.bytes_read
    for src in first.sources.values():
        with open(root / src.path, "rb") as h:
            h.seek(src.offset)
            assert len(h.read(src.size)) == src.size
    write(root / "latest", b"3\n")
    second = scan(root, first.tree)
    assert second.bytes_read == 2  # the checkpoints kept their chunk lists unread
    assert decode_tree(encode_tree(second.tree)) == second.tree


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a//b", "."])
def test_unsafe_trees_are_refused(path: str) -> None:
    with pytest.raises(TreeError):
        check_tree(ArtifactTree([TreeEntry(path, "f", 0o600)]))


def test_a_file_whose_chunks_do_not_add_up_is_refused() -> None:
    with pytest.raises(TreeError, match="add up"):
        check_tree(ArtifactTree([TreeEntry("x", "f", 0o600, size=os.getpid() + 1)]))
