"""One attempt's `$NVQ_ARTIFACTS` on a node, and what a sync of it is made from.

Three ways it can start:
* *mounted*: the previous attempt's tree is mounted on demand (lazyfs.py); the job's
  writes go to `artifacts.upper/` beside it. Nothing is fetched up front.
* *restored*: FUSE is not available here (or `[[nodes]] lazy_artifacts = false`): every
  chunk the node's cache lacks is fetched and the files are assembled before the job
  starts, with the reason kept as a note for `job show`.
* *plain*: no previous tree; an ordinary directory.

`snapshot()` describes the view for a sync; in the mounted case the files the job has
not touched are taken from the tree as they are, so a sync reads only what the job
wrote. The mount goes when the attempt ends (`close`), and the tree's remaining part is
written to `artifacts.lower` so a sync after the end, even by a restarted runner, still
describes the whole directory.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from .artifact_tree import (
    FILE,
    ArtifactTree,
    Scan,
    TreeEntry,
    decode_tree,
    encode_tree,
    scan,
)
from .blobcache import BlobCache
from .blobfetch import BlobFetcher

log = logging.getLogger(__name__)

FETCH_TIMEOUT = 600.0
BATCH = 64  # chunks per request when restoring in full


class LinkChunks:
    """Chunks for FUSE threads and the eager restore: fetched over the runner's link
    to the queue host (BlobFetcher, on the event loop) into the node's blob cache.
    Counts the bytes that actually crossed, for `job show`."""

    def __init__(self, fetcher: BlobFetcher, loop: asyncio.AbstractEventLoop, job_id: int,
                 sizes: dict[str, int]) -> None:
        self.cache: BlobCache = fetcher.cache
        self.fetcher = fetcher
        self.loop = loop
        self.job_id = job_id
        self.sizes = sizes
        self.fetched_bytes = 0
        self._lock = threading.Lock()
        self._inflight: dict[str, concurrent.futures.Future[None]] = {}

    def _start(self, hashes: list[str]) -> list[concurrent.futures.Future[None]]:
        waits: list[concurrent.futures.Future[None]] = []
        future: concurrent.futures.Future[None] | None = None
        with self._lock:
            new = [h for h in dict.fromkeys(hashes)
                   if not self.cache.has(h) and h not in self._inflight]
            waits = [self._inflight[h] for h in hashes if h in self._inflight]
            if new:
                future = asyncio.run_coroutine_threadsafe(
                    self.fetcher.fetch(self.job_id, new, self.sizes), self.loop)
                for digest in new:
                    self._inflight[digest] = future
                self.fetched_bytes += sum(self.sizes.get(h, 0) for h in new)
                waits.append(future)
        if future is not None:
            # outside the lock: a future already done runs its callback right here
            future.add_done_callback(self._forget(new))
        return waits

    def _forget(self, hashes: list[str]) -> Callable[[concurrent.futures.Future[None]], None]:
        def done(_future: concurrent.futures.Future[None]) -> None:
            with self._lock:
                for digest in hashes:
                    self._inflight.pop(digest, None)

        return done

    def fetch(self, hashes: list[str]) -> None:
        for future in self._start(hashes):
            try:
                future.result(timeout=FETCH_TIMEOUT)
            except Exception as exc:
                raise OSError(f"cannot fetch artifacts from the queue host: {exc}") from exc

    def prefetch(self, hashes: list[str]) -> None:
        self._start(hashes)

    def path(self, digest: str) -> Path:
        return self.cache.path(digest)


def restore(tree: ArtifactTree, dest: Path, chunks: LinkChunks,
            owner: tuple[int, int] | None = None) -> None:
    """Assemble every file of `tree` under `dest` (blocking; run it in a thread), as
    `owner`'s (uid, gid) when the job runs as another user than the runner."""
    files = tree.files()
    wanted = list(dict.fromkeys(c.sha256 for e in files for c in e.chunks))
    for at in range(0, len(wanted), BATCH):
        chunks.fetch(wanted[at:at + BATCH])
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    for entry in tree.entries:
        target = dest / entry.path
        if entry.kind != FILE:
            target.mkdir(mode=0o700, exist_ok=True)
            if owner is not None:
                os.chown(target, *owner)
            continue
        temp = target.with_name(f".{target.name}.nvq-restore")
        with open(temp, "wb") as out:
            for chunk in entry.chunks:
                out.write(_read_chunk(chunks, chunk.sha256))
        os.chmod(temp, entry.mode)
        os.utime(temp, ns=(entry.mtime_ns, entry.mtime_ns))
        if owner is not None:
            os.chown(temp, *owner)
        os.replace(temp, target)
    if owner is not None:
        os.chown(dest, *owner)
    for entry in reversed(tree.entries):
        if entry.kind != FILE:
            os.chmod(dest / entry.path, entry.mode)


def _read_chunk(chunks: LinkChunks, digest: str) -> bytes:
    try:
        return chunks.path(digest).read_bytes()
    except FileNotFoundError:  # evicted since it was fetched: fetch it again
        chunks.fetch([digest])
        return chunks.path(digest).read_bytes()


class ArtifactView:
    def __init__(self, directory: Path, owner: tuple[int, int] | None = None) -> None:
        self.directory = directory  # $NVQ_ARTIFACTS
        # (uid, gid) of the job's user when that is not the runner's: the view is
        # theirs from the start, so nothing needs chowning once it is mounted.
        self.owner = owner
        self.upper = directory.with_name("artifacts.upper")
        self.lower_file = directory.with_name("artifacts.lower")
        self.mode = "plain"
        self.note = ""
        self.chunks: LinkChunks | None = None
        self._fs: object | None = None
        self._mount: object | None = None

    @property
    def fetched_bytes(self) -> int:
        return self.chunks.fetched_bytes if self.chunks is not None else 0

    def open(self, tree: ArtifactTree | None, chunks: LinkChunks | None, *, lazy: bool,
             node: str, on_sync: Callable[[str], None] | None = None) -> None:
        """Blocking: run it in a thread before the job starts."""
        if tree is None or chunks is None or not tree.entries:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            return
        self.chunks = chunks
        from .fusemount import clean_stale, unavailable

        # The tree is the whole truth: what an earlier attempt of this job left in this
        # directory (it may have run here before) must not shadow newer versions.
        clean_stale(self.directory)
        shutil.rmtree(self.upper, ignore_errors=True)
        self.lower_file.unlink(missing_ok=True)
        shutil.rmtree(self.directory, ignore_errors=True)
        why = "lazy_artifacts = false" if not lazy else unavailable()
        if why is None:
            try:
                self._mount_tree(tree, chunks, on_sync)
                return
            except OSError as exc:
                why = str(exc)
        self.note = f"artifacts restored in full: FUSE not available on {node} ({why})"
        restore(tree, self.directory, chunks, self.owner)
        self.mode = "restored"

    def _mount_tree(self, tree: ArtifactTree, chunks: LinkChunks,
                    on_sync: Callable[[str], None] | None) -> None:
        from .fusemount import Mount
        from .lazyfs import LazyFS

        self.upper.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.directory.is_dir() and any(self.directory.iterdir()):
            raise OSError(f"{self.directory} is not empty")
        fs = LazyFS(tree, self.upper, chunks, on_control=on_sync, owner=self.owner)
        mount = Mount(fs, self.directory, allow_other=self.owner is not None)
        mount.start()
        self._fs, self._mount = fs, mount
        self.mode = "mounted"
        self._keep_lower()

    def _keep_lower(self) -> None:
        """The tree's part of the view, on disk: for syncs after the unmount and for a
        restarted runner, which mounts it again for a job still running."""
        from .lazyfs import LazyFS

        if isinstance(self._fs, LazyFS):
            data = encode_tree(ArtifactTree(self._fs.lower_entries()))
            temp = self.lower_file.with_name(self.lower_file.name + ".tmp")
            with contextlib.suppress(OSError):
                temp.write_bytes(data)
                os.replace(temp, self.lower_file)

    def remount(self, chunks_for: Callable[[ArtifactTree], LinkChunks]) -> bool:
        """After a runner restart: mount the kept tree again over the upper directory
        (blocking). False when this directory was never mounted."""
        from .fusemount import clean_stale

        if not self.upper.is_dir() or not self.lower_file.is_file():
            return False
        tree = decode_tree(self.lower_file.read_bytes())
        clean_stale(self.directory)
        self.chunks = chunks_for(tree)
        self._mount_tree(tree, self.chunks, None)
        return True

    def lower_entries(self) -> list[TreeEntry]:
        from .lazyfs import LazyFS

        if isinstance(self._fs, LazyFS):
            return self._fs.lower_entries()
        with contextlib.suppress(OSError, ValueError):
            return decode_tree(self.lower_file.read_bytes()).entries
        return []

    def read_root(self) -> Path:
        """Where the files a scan found can be read (the daemon reads chunk ranges
        there): the upper directory whenever a tree was mounted."""
        return self.upper if self.mode == "mounted" or self.lower_file.exists() else self.directory

    def snapshot(self, previous: ArtifactTree | None) -> Scan:
        """The directory now (blocking; run it in a thread)."""
        root = self.read_root()
        keep = self.lower_entries() if root == self.upper else []
        self._keep_lower()
        return scan(root, previous, keep=keep)

    def close(self) -> None:
        """Unmount, keeping the tree's remaining part on disk for later syncs."""
        from .fusemount import Mount

        self._keep_lower()
        if isinstance(self._mount, Mount):
            self._mount.stop()
        self._fs = self._mount = None
