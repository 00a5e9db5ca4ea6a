"""The runner reading a sync's byte ranges for the daemon over its link: only files
beneath the job's artifacts, never through a symlink, and never more than a frame."""

from __future__ import annotations

import os
from pathlib import Path

from nvq_runner.chunk_reads import MAX_REQUEST, read_chunks
from nvq_runner.protocol import ReadChunks


def ask(path: str, ranges: list[tuple[int, int]]) -> ReadChunks:
    return ReadChunks(req=7, job_id=1, path=path, ranges=ranges)


def test_ranges_of_a_nested_file_come_back_in_order(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ckpt").write_bytes(bytes(range(256)) * 4)
    reply = read_chunks(tmp_path, ask("sub/ckpt", [(256, 4), (0, 3), (1020, 10)]))
    assert reply.error is None and reply.req == 7
    assert reply.data == [bytes([0, 1, 2, 3]), bytes([0, 1, 2]), bytes([252, 253, 254, 255])]


def test_paths_outside_the_artifacts_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    root.mkdir()
    (tmp_path / "secret").write_text("key")
    for path in ["../secret", "/etc/passwd", "", "a//b", "./x"]:
        reply = read_chunks(root, ask(path, [(0, 3)]))
        assert reply.data == [] and reply.error, path


def test_a_file_swapped_for_a_symlink_after_the_scan_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    (root / "d").mkdir(parents=True)
    (tmp_path / "secret").write_text("key")
    os.symlink(tmp_path / "secret", root / "model.bin")
    os.symlink(tmp_path, root / "up")
    for path in ["model.bin", "up/secret"]:
        reply = read_chunks(root, ask(path, [(0, 3)]))
        assert reply.data == [] and reply.error, path


def test_a_request_over_the_frame_budget_or_with_negative_ranges_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert read_chunks(tmp_path, ask("f", [(0, MAX_REQUEST + 1)])).error
    assert read_chunks(tmp_path, ask("f", [(-1, 2)])).error
    assert read_chunks(tmp_path, ask("missing", [(0, 1)])).error
