"""The on-demand artifacts view, mounted for real through /dev/fuse."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvq_runner.artifact_tree import ArtifactTree, Chunk, scan
from nvq_runner.fusemount import Mount, clean_stale, fuse_mounts, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"FUSE: {unavailable()}")
ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024


class Store:
    """The queue host's chunks, and a node cache that counts what crosses to it."""

    def __init__(self, root: Path) -> None:
        self.remote: dict[str, bytes] = {}
        self.cache = root
        self.cache.mkdir()
        self.fetched = 0
        self.lock = threading.Lock()

    def add_tree(self, source: Path) -> ArtifactTree:
        result = scan(source)
        for digest, src in result.sources.items():
            with open(source / src.path, "rb") as h:
                h.seek(src.offset)
                self.remote[digest] = h.read(src.size)
        return result.tree

    def path(self, digest: str) -> Path:
        return self.cache / digest

    def fetch(self, hashes: list[str]) -> None:
        with self.lock:
            for digest in hashes:
                if not self.path(digest).exists():
                    self.path(digest).write_bytes(self.remote[digest])
                    self.fetched += len(self.remote[digest])

    def prefetch(self, hashes: list[str]) -> None:
        self.fetch(hashes)


def data(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[Path, Store, Mount, Path]]:
    from nvq_runner.lazyfs import LazyFS

    before = tmp_path / "before"
    (before / "ckpt").mkdir(parents=True)
    for i in range(4):
        (before / "ckpt" / f"{i}.pt").write_bytes(data(4 * MiB, i))
    (before / "latest").write_text("3\n")
    store = Store(tmp_path / "cache")
    tree = store.add_tree(before)
    upper = tmp_path / "upper"
    upper.mkdir()
    point = tmp_path / "artifacts"
    mount = Mount(LazyFS(tree, upper, store), point)
    mount.start()
    try:
        yield point, store, mount, upper
    finally:
        mount.stop()
    assert fuse_mounts(tmp_path) == []


def test_listing_costs_nothing_and_a_read_fetches_only_that_file(
    mounted: tuple[Path, Store, Mount, Path],
) -> None:
    point, store, _, _ = mounted
    assert sorted(os.listdir(point)) == ["ckpt", "latest"]
    assert {p.name: p.stat().st_size for p in (point / "ckpt").iterdir()} == {
        f"{i}.pt": 4 * MiB for i in range(4)
    }
    assert store.fetched == 0
    newest = (point / "latest").read_text().strip()
    assert (point / "ckpt" / f"{newest}.pt").read_bytes() == data(4 * MiB, 3)
    assert 4 * MiB <= store.fetched < 4 * MiB + 1024


def test_writes_land_in_the_upper_dir_and_the_view_syncs_without_reading_the_rest(
    mounted: tuple[Path, Store, Mount, Path],
) -> None:
    point, store, mount, upper = mounted
    (point / "ckpt" / "4.pt.tmp").write_bytes(data(2 * MiB, 4))
    os.rename(point / "ckpt" / "4.pt.tmp", point / "ckpt" / "4.pt")
    os.rename(point / "ckpt" / "0.pt", point / "ckpt" / "old.pt")  # metadata only
    os.unlink(point / "ckpt" / "1.pt")
    with open(point / "latest", "a") as h:  # copy-up of a small file
        h.write("4\n")
    os.mkdir(point / "logs")
    assert sorted(os.listdir(point / "ckpt")) == ["2.pt", "3.pt", "4.pt", "old.pt"]
    assert (point / "latest").read_text() == "3\n4\n"
    assert store.fetched < 1024  # only `latest` was fetched
    assert sorted(p.relative_to(upper).as_posix() for p in upper.rglob("*")) == [
        "ckpt", "ckpt/4.pt", "latest", "logs"]
    view = scan(upper, keep=mount.operations.lower_entries())
    files = {e.path: e.size for e in view.tree.files()}
    assert files == {"ckpt/2.pt": 4 * MiB, "ckpt/3.pt": 4 * MiB, "ckpt/4.pt": 2 * MiB,
                     "ckpt/old.pt": 4 * MiB, "latest": 4}
    assert view.bytes_read == 2 * MiB + 4
    old = next(e for e in view.tree.files() if e.path == "ckpt/old.pt")
    assert hashlib.sha256(b"".join(store.remote[c.sha256] for c in old.chunks)).digest() \
        == hashlib.sha256(data(4 * MiB, 0)).digest()
    assert all(isinstance(c, Chunk) for c in old.chunks)


def test_truncating_a_checkpoint_fetches_nothing(
    mounted: tuple[Path, Store, Mount, Path],
) -> None:
    point, store, _, _ = mounted
    (point / "ckpt" / "2.pt").write_bytes(b"new")
    assert (point / "ckpt" / "2.pt").read_bytes() == b"new"
    assert store.fetched == 0


def test_a_mount_left_by_a_killed_process_is_cleaned(tmp_path: Path) -> None:
    point = tmp_path / "home" / "jobs" / "7" / "artifacts"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from nvq_runner.artifact_tree import ArtifactTree\n"
        "from nvq_runner.fusemount import Mount\n"
        "from nvq_runner.lazyfs import LazyFS\n"
        "up = Path(sys.argv[2]); up.mkdir()\n"
        "Mount(LazyFS(ArtifactTree([]), up, None), Path(sys.argv[1])).start()\n"
        "print('mounted', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(point), str(tmp_path / "up")],
                            stdout=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "mounted"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert fuse_mounts(tmp_path) == [str(point)]
    with pytest.raises(OSError):
        os.listdir(point)  # dead: "Transport endpoint is not connected"
    assert clean_stale(tmp_path / "home") == [str(point)]
    assert fuse_mounts(tmp_path) == []
    assert os.listdir(point) == []


def test_mounting_leaves_the_process_in_its_directory(tmp_path: Path) -> None:
    """libfuse moves the process to /; the runner's socket is bound relative to its
    home, so a mount must not move it."""
    from nvq_runner.lazyfs import LazyFS

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        (tmp_path / "up").mkdir()
        mount = Mount(LazyFS(ArtifactTree([]), tmp_path / "up", Store(tmp_path / "c")),
                      tmp_path / "mnt")
        mount.start()
        try:
            assert os.getcwd() == str(tmp_path)
        finally:
            mount.stop()
    finally:
        os.chdir(here)


def test_another_users_view_is_theirs_from_the_start(tmp_path: Path) -> None:
    # The runner mounts a member's artifacts: every file reads as theirs (the kernel
    # checks their access against that), and giving it to them again is a no-op, as
    # the runner does for every job directory; giving it to anyone else is refused.
    import errno

    from nvq_runner.lazyfs import LazyFS

    before = tmp_path / "before"
    before.mkdir()
    (before / "step").write_text("5\n")
    store = Store(tmp_path / "cache")
    upper = tmp_path / "upper"
    upper.mkdir()
    point = tmp_path / "artifacts"
    member = (54321, 54321)
    mount = Mount(LazyFS(store.add_tree(before), upper, store, owner=member), point,
                  allow_other=True)
    mount.start()
    try:
        (point / "new").write_text("mine\n")  # made by the runner in the upper layer
        for path in (point, point / "step", point / "new"):
            st = path.stat()
            assert (st.st_uid, st.st_gid) == member, path
        os.chown(point, *member)
        os.chown(point / "step", *member)
        with pytest.raises(PermissionError) as refused:
            os.chown(point / "step", 0, 0)
        assert refused.value.errno == errno.EPERM
    finally:
        mount.stop()
    assert fuse_mounts(tmp_path) == []
