from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from nvq.world.blobs import BlobStore
from nvq.world.snapshot import (
    SnapshotError,
    SnapshotTooLarge,
    cwd_subdir,
    format_size,
    scan,
    store_snapshot,
    take_snapshot,
)
from nvq_runner.protocol import DIR, FILE, LINK, decode_manifest, manifest_id
from tests.world.conftest import write


def paths(root: Path) -> list[str]:
    return [e.path for e in take_snapshot(root).manifest.entries]


def test_snapshot_takes_the_code_and_leaves_what_git_and_nvq_ignore(project: Path) -> None:
    assert paths(project) == [
        ".gitignore",
        ".nvqignore",
        "config.yaml",
        "host-link",
        "keep.log",
        "run.sh",
        "src",
        "src-link",
        "src/.gitignore",
        "src/best.ckpt",
        "src/build",
        "src/build/gen.py",
        "src/model.py",
        "train.py",
    ]


def test_entries_carry_kind_mode_size_and_content_hash(project: Path) -> None:
    entries = {e.path: e for e in take_snapshot(project).manifest.entries}
    run = entries["run.sh"]
    assert (run.kind, run.mode, run.size) == (FILE, 0o755, len("#!/bin/sh\npython train.py\n"))
    assert entries["train.py"].mode == 0o644
    assert entries["src"].kind == DIR
    # links are recorded as links, never followed out of the tree
    assert (entries["host-link"].kind, entries["host-link"].target) == (LINK, "/etc/hostname")
    assert (entries["src-link"].kind, entries["src-link"].target) == (LINK, "src")
    assert entries["config.yaml"].sha256 == hashlib.sha256(b"lr: 0.1\n").hexdigest()


def test_negation_cannot_reinclude_inside_an_ignored_directory(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "logs/\n!logs/keep.txt\n")
    write(tmp_path / "logs" / "keep.txt", "x")
    write(tmp_path / "a.py", "x")
    assert paths(tmp_path) == [".gitignore", "a.py"]


def test_nvqignore_can_reinclude_what_gitignore_drops(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "*.yaml\n")
    write(tmp_path / ".nvqignore", "!config.yaml\n")
    write(tmp_path / "config.yaml", "lr: 1\n")
    write(tmp_path / "other.yaml", "x\n")
    assert paths(tmp_path) == [".gitignore", ".nvqignore", "config.yaml"]


def test_over_size_is_refused_naming_the_largest_entries(tmp_path: Path) -> None:
    write(tmp_path / "a" / "one.bin", b"\0" * 2048)
    write(tmp_path / "a" / "two.bin", b"\0" * 1024)
    write(tmp_path / "b.bin", b"\0" * 1000)
    write(tmp_path / "c.py", b"x")
    with pytest.raises(SnapshotTooLarge) as caught:
        take_snapshot(tmp_path, max_size=2000)
    assert str(caught.value) == (
        f"the snapshot of {tmp_path.resolve()} is 4.0 KiB; the largest entries are "
        "a/ (3.0 KiB), b.bin (1000 B), c.py (1 B); add them to .nvqignore or pass "
        "--no-snapshot"
    )


def test_over_size_looks_inside_a_lone_top_directory(tmp_path: Path) -> None:
    write(tmp_path / "repo" / "weights" / "w.bin", b"\0" * 5000)
    write(tmp_path / "repo" / "main.py", b"x" * 10)
    with pytest.raises(SnapshotTooLarge, match=r"entries are repo/weights/ \(4\.9 KiB\), repo/main.py"):
        take_snapshot(tmp_path, max_size=100)


def test_sizes_read_as_people_write_them() -> None:
    assert format_size(int(2.3 * 1024**3)) == "2.3 GiB"
    assert format_size(300 * 1024**2) == "300 MiB"
    assert format_size(512) == "512 B"


def test_an_unchanged_tree_is_not_read_again(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "home" / "blobs" / "statcache"
    first = take_snapshot(project, stat_cache=cache)
    assert first.hashed == len(first.manifest.files())
    again = take_snapshot(project, stat_cache=cache)
    assert again.hashed == 0
    assert again.manifest == first.manifest


def test_an_edited_file_is_hashed_again(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "statcache"
    take_snapshot(project, stat_cache=cache)
    # same size, new content, a different (old) mtime
    write(project / "config.yaml", "lr: 0.2\n")
    os.utime(project / "config.yaml", (1_600_000_100, 1_600_000_100))
    again = take_snapshot(project, stat_cache=cache)
    assert again.hashed == 1
    entry = next(e for e in again.manifest.entries if e.path == "config.yaml")
    assert entry.sha256 == hashlib.sha256(b"lr: 0.2\n").hexdigest()


def test_a_file_written_just_now_is_not_trusted_to_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / "fresh.py", "x = 1\n", old=False)
    cache = tmp_path / "statcache"
    take_snapshot(root, stat_cache=cache)
    assert take_snapshot(root, stat_cache=cache).hashed == 1


def test_a_sweep_of_one_directory_stores_its_code_once(project: Path, tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "home" / "blobs")
    ids = {store_snapshot(take_snapshot(project), store) for _ in range(100)}
    assert len(ids) == 1
    snapshot = take_snapshot(project)
    # every distinct content once, plus the manifest
    assert store.usage()[0] == len(snapshot.manifest.hashes()) + 1
    stored = decode_manifest(store.read_bytes(ids.pop()))
    assert manifest_id(stored) == manifest_id(snapshot.manifest)


def test_a_file_edited_between_hash_and_store_is_refused(project: Path, tmp_path: Path) -> None:
    snapshot = take_snapshot(project)
    write(project / "train.py", "print('edited')\n")
    with pytest.raises(SnapshotError, match=r"train.py changed while it was being snapshotted"):
        store_snapshot(snapshot, BlobStore(tmp_path / "blobs"))


def test_the_job_starts_where_the_user_submitted(project: Path) -> None:
    assert cwd_subdir(project, project) == ""
    assert cwd_subdir(project, project / "src") == "src"


def test_a_nested_nvqignore_applies_below_its_directory(tmp_path: Path) -> None:
    write(tmp_path / "exp" / ".nvqignore", "*.csv\n")
    write(tmp_path / "exp" / "runs.csv", "1,2\n")
    write(tmp_path / "top.csv", "3,4\n")
    assert paths(tmp_path) == ["exp", "exp/.nvqignore", "top.csv"]


def test_the_stat_cache_is_private_whatever_the_umask(
    project: Path, tmp_path: Path, umask_000: None,
) -> None:
    cache = tmp_path / "home" / "blobs" / "statcache"
    take_snapshot(project, stat_cache=cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700


def test_an_excluded_directory_is_skipped_even_without_markers(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "x").write_text("x")
    (tmp_path / "a.py").write_text("a")
    rels = [f.rel for f in scan(tmp_path, exclude=[tmp_path / "home"])]
    assert rels == ["a.py"]
    assert [f.rel for f in scan(tmp_path)] == ["a.py", "home", "home/x"]


def test_a_file_gone_between_hashing_and_storing_is_left_out(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for name, text in {"a.txt": "same", "b.txt": "same", "c.txt": "alone", "d.txt": "kept"}.items():
        write(root / name, text)
    snap = take_snapshot(root)
    # Whichever of a and b held the content, the other still does.
    snap.sources[hashlib.sha256(b"same").hexdigest()].unlink()
    (root / "c.txt").unlink()
    store = BlobStore(tmp_path / "blobs")
    manifest = decode_manifest(store.read_bytes(store_snapshot(snap, store)))
    paths = sorted(e.path for e in manifest.entries if e.kind == FILE)
    assert len(paths) == 3 and "c.txt" not in paths and "d.txt" in paths
    assert snap.vanished == ["c.txt"]
    assert snap.vanished_line() == (
        "nvq: skipped 1 path(s) that vanished while the snapshot was taken: c.txt"
    )
