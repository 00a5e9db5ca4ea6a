from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nvq_runner import blobcache
from nvq_runner.blobcache import BlobCache, ObjectMismatch
from nvq_runner.protocol import DIR, FILE, LINK, Entry, Manifest, ManifestError

ROOT = Path(__file__).resolve().parents[2]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


TRAIN = b"print('train')\n"
RUN = b"#!/bin/sh\nexec python src/train.py\n"
CONFIG = b"lr: 0.1\n"
TREE = Manifest([
    Entry("config.yaml", FILE, 0o644, len(CONFIG), sha(CONFIG)),
    Entry("ro", DIR, 0o555),
    Entry("ro/notes.txt", FILE, 0o644, len(CONFIG), sha(CONFIG)),
    Entry("run.sh", FILE, 0o755, len(RUN), sha(RUN)),
    Entry("src", DIR, 0o750),
    Entry("src/train.py", FILE, 0o600, len(TRAIN), sha(TRAIN)),
    Entry("train-link", LINK, 0o777, target="src/train.py"),
])


def filled(root: Path) -> BlobCache:
    cache = BlobCache(root)
    for data in (TRAIN, RUN, CONFIG):
        cache.put_bytes(data, sha(data))
    return cache


def test_missing_blobs_are_named_and_nothing_is_built(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    cache.put_bytes(CONFIG, sha(CONFIG))
    dest = tmp_path / "jobs" / "1" / "work"
    assert cache.materialise(TREE, dest) == sorted([sha(TRAIN), sha(RUN)])
    assert not dest.exists()


def test_the_working_copy_is_the_snapshot(tmp_path: Path) -> None:
    dest = tmp_path / "work"
    assert filled(tmp_path / "cache").materialise(TREE, dest) == []
    assert (dest / "src" / "train.py").read_bytes() == TRAIN
    assert (dest / "ro" / "notes.txt").read_bytes() == CONFIG
    assert os.readlink(dest / "train-link") == "src/train.py"
    assert (dest / "train-link").read_bytes() == TRAIN
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "src").stat().st_mode) == 0o750
    assert stat.S_IMODE((dest / "ro").stat().st_mode) == 0o555
    out = subprocess.run([dest / "run.sh"], capture_output=True, text=True, cwd=dest, check=False,
                         env={"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"})
    assert out.stdout == "train\n"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".work.partial")]


def test_files_are_hard_links_to_a_read_only_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobcache, "_may_link", lambda: True)
    cache = filled(tmp_path / "cache")
    cache.materialise(TREE, tmp_path / "a")
    cache.materialise(TREE, tmp_path / "b")
    cached = cache.path(sha(TRAIN)).stat()
    assert cached.st_nlink == 3  # the cache and two working copies share one inode
    assert (tmp_path / "a" / "src" / "train.py").stat().st_ino == cached.st_ino
    assert stat.S_IMODE(cached.st_mode) == 0o400
    # executables are copies with their own mode
    assert (tmp_path / "a" / "run.sh").stat().st_nlink == 1


def test_as_root_every_file_is_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blobcache, "_may_link", lambda: False)
    cache = filled(tmp_path / "cache")
    cache.materialise(TREE, tmp_path / "a")
    (tmp_path / "a" / "src" / "train.py").write_bytes(b"job rewrote it")
    assert cache.path(sha(TRAIN)).read_bytes() == TRAIN
    assert stat.S_IMODE((tmp_path / "a" / "src" / "train.py").stat().st_mode) == 0o600


def test_an_existing_destination_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    with pytest.raises(FileExistsError):
        filled(tmp_path / "cache").materialise(TREE, tmp_path / "work")


@pytest.mark.parametrize("path", ["../escape", "/etc/passwd", "a/../../x", "missing-dir/x"])
def test_a_manifest_that_would_write_elsewhere_is_refused(tmp_path: Path, path: str) -> None:
    bad = Manifest([Entry(path, FILE, 0o644, len(CONFIG), sha(CONFIG))])
    with pytest.raises(ManifestError):
        filled(tmp_path / "cache").materialise(bad, tmp_path / "work")
    assert not (tmp_path / "work").exists()


def test_nothing_is_written_through_a_link_of_the_manifest(tmp_path: Path) -> None:
    bad = Manifest([
        Entry("d", LINK, 0o777, target=str(tmp_path / "outside")),
        Entry("d/x", FILE, 0o644, len(CONFIG), sha(CONFIG)),
    ])
    with pytest.raises(ManifestError):
        filled(tmp_path / "cache").materialise(bad, tmp_path / "work")


def test_a_blob_is_accepted_only_under_its_own_hash(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    temp = cache.temp_file()
    temp.write_bytes(b"truncated")
    with pytest.raises(ObjectMismatch):
        cache.adopt(temp, sha(TRAIN))
    assert not cache.has(sha(TRAIN)) and not temp.exists()
    temp = cache.temp_file()
    temp.write_bytes(TRAIN)
    assert cache.adopt(temp, sha(TRAIN)) == sha(TRAIN)
    assert cache.open(sha(TRAIN)).read() == TRAIN


def test_cache_is_private_whatever_the_umask(tmp_path: Path, umask_000: None) -> None:
    cache = filled(tmp_path / "cache")
    assert stat.S_IMODE(cache.path(sha(TRAIN)).stat().st_mode) == 0o400
    for directory in (tmp_path / "cache", tmp_path / "cache" / "objects",
                      cache.path(sha(TRAIN)).parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_least_recently_used_blobs_go_first(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    blobs = [bytes([i]) * 1000 for i in range(4)]
    for i, data in enumerate(blobs):
        cache.put_bytes(data, sha(data))
        os.utime(cache.path(sha(data)), (1_600_000_000 + i, 1_600_000_000))
    # the oldest is in use by a starting job: it stays, the next oldest go
    evicted = cache.evict(keep={sha(blobs[0])}, max_bytes=2000)
    assert (evicted.objects, evicted.bytes) == (2, 2000)
    assert [cache.has(sha(d)) for d in blobs] == [True, False, False, True]


def test_materialising_marks_blobs_used_and_keeps_the_cache_in_bounds(tmp_path: Path) -> None:
    cache = filled(tmp_path / "cache")
    old = b"an old blob nobody needs" * 100
    cache.put_bytes(old, sha(old))
    os.utime(cache.path(sha(old)), (1_600_000_000, 1_600_000_000))
    for data in (TRAIN, RUN, CONFIG):
        os.utime(cache.path(sha(data)), (1_600_000_000, 1_600_000_000))
    cache.max_bytes = len(TRAIN) + len(RUN) + len(CONFIG)
    cache.materialise(TREE, tmp_path / "work")
    assert not cache.has(sha(old))
    assert cache.missing_for(TREE) == []


def test_blobs_stored_after_a_start_count_towards_the_size_at_the_next(tmp_path: Path) -> None:
    cache = filled(tmp_path / "cache")
    cache.max_bytes = 10_000
    cache.materialise(TREE, tmp_path / "w1")  # under the size: nothing goes
    big = b"x" * 20_000
    cache.put_bytes(big, sha(big))  # a fetch for some other job: now over it
    os.utime(cache.path(sha(big)), (1_600_000_000, 1_600_000_000))
    cache.materialise(TREE, tmp_path / "w2")
    assert not cache.has(sha(big))
    assert cache.missing_for(TREE) == []


def test_what_another_process_stored_is_counted_at_the_next_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = filled(tmp_path / "cache")
    cache.max_bytes = 10_000
    cache.materialise(TREE, tmp_path / "w1")
    big = b"y" * 20_000
    BlobCache(tmp_path / "cache").put_bytes(big, sha(big))  # unseen by `cache`
    os.utime(cache.path(sha(big)), (1_600_000_000, 1_600_000_000))
    monkeypatch.setattr(blobcache, "RECOUNT_AFTER", 0.0)  # the count is old now
    cache.materialise(TREE, tmp_path / "w2")
    assert not cache.has(sha(big))


def test_the_runner_side_imports_nothing_of_nvq() -> None:
    code = (
        "import sys, nvq_runner.blobcache, nvq_runner.setup_env, nvq_runner.protocol; "
        "print(sorted(m for m in sys.modules if m == 'nvq' or m.startswith('nvq.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
