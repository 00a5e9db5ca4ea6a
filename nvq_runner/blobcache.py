"""A node's cache of snapshot blobs, `<runner home>/cache/`, and the working copies
built from it.

Each blob crosses to a node once; every later job that needs it takes it from here.
`materialise` rebuilds a job's tree from a manifest: directories, files, symlinks and
modes. Files are hard links to the cached object where the filesystem allows, so a
sweep of a hundred jobs does not hold a hundred copies of the code. A hard link shares
its inode (content and mode) with the cache, so cached objects are read-only (0400)
and a linked file is read-only in the working copy too: a job may replace or delete
it, never write into the cache through it. Executable files, and every file when the
runner is root (to whom read-only means nothing), are copied with their exact modes.

Least recently used objects go first when the cache grows past its size; a use is
recorded as the object's access time.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec

from nvq_runner.objects import ObjectDir, ObjectMismatch
from nvq_runner.protocol import (
    DIR,
    FILE,
    LINK,
    Manifest,
    ManifestError,
    check_manifest,
    decode_manifest,
)

__all__ = ["DEFAULT_CACHE_SIZE", "BlobCache", "Evicted", "ObjectMismatch"]

DEFAULT_CACHE_SIZE = 10 * 1024**3
CACHED_MODE = 0o400
# errors that mean "this filesystem will not link here": copy instead
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES}


@dataclass(frozen=True)
class Evicted:
    objects: int
    bytes: int


MANIFESTS_KEPT = 16
RECOUNT_AFTER = 300.0  # seconds between walks of a cache that is under its size


class BlobCache:
    """`root` is `<runner home>/cache`. Safe to share between the runner's threads."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_CACHE_SIZE) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._objects = ObjectDir(root, file_mode=CACHED_MODE)
        # eviction must not remove an object between a check and its link
        self._lock = threading.Lock()
        # Decoded manifests by id: content-addressed, so never stale. A queue of
        # jobs from one snapshot (an array) would otherwise read and decode the same
        # manifest once per job.
        self._manifests: dict[str, Manifest] = {}
        # Bytes held, from the last walk plus what was stored through this object
        # since (None: not walked yet). Every job start used to walk and stat the
        # whole cache to learn this: 145 ms per start at 20,000 objects.
        self._held: int | None = None
        self._walked_at = 0.0

    def path(self, digest: str) -> Path:
        return self._objects.path(digest)

    def has(self, digest: str) -> bool:
        return self._objects.has(digest)

    def missing(self, digests: Iterable[str]) -> list[str]:
        return self._objects.missing(digests)

    def missing_for(self, manifest: Manifest) -> list[str]:
        return self._objects.missing(sorted(manifest.hashes()))

    def open(self, digest: str) -> BinaryIO:
        return self._objects.open(digest)

    # ------------------------------------------------------------- filling it

    def put_bytes(self, data: bytes, expected: str) -> str:
        """A blob that arrived whole (e.g. in a frame); refused unless it hashes to
        `expected`."""
        return self._stored(self._objects.put_bytes(data, expected))

    def put_chunks(self, chunks: Iterable[bytes], expected: str) -> str:
        return self._stored(self._objects.put_chunks(chunks, expected))

    def temp_file(self) -> Path:
        """Where a caller downloads a blob itself (SFTP) before `adopt`."""
        return self._objects.temp_file()

    def adopt(self, temp: Path, expected: str) -> str:
        return self._stored(self._objects.adopt(temp, expected))

    def _stored(self, digest: str) -> str:
        """Count a stored object (twice if it was there already: an overcount only
        brings the next walk forward)."""
        with contextlib.suppress(OSError):
            size = self.path(digest).stat().st_size
            with self._lock:
                if self._held is not None:
                    self._held += size
        return digest

    def load_manifest(self, manifest_id: str) -> Manifest | None:
        """The manifest if its blob is cached (fetch it first when this is None)."""
        known = self._manifests.get(manifest_id)
        if known is not None:
            return known
        try:
            data = self._objects.read_bytes(manifest_id)
        except FileNotFoundError:
            return None
        try:
            manifest = decode_manifest(data)
        except msgspec.DecodeError as e:
            raise ManifestError(f"unreadable manifest {manifest_id}: {e}") from None
        if len(self._manifests) >= MANIFESTS_KEPT:
            del self._manifests[next(iter(self._manifests))]
        self._manifests[manifest_id] = manifest
        return manifest

    # ------------------------------------------------------------ using it

    def materialise(self, manifest: Manifest, dest: Path, *, link: bool = True) -> list[str]:
        """Build the tree of `manifest` at `dest`, which must not exist yet. Returns the
        blobs the cache lacks, sorted, and builds nothing while any are missing: the
        caller fetches them and calls again. The tree appears whole or not at all."""
        check_manifest(manifest)
        needed = manifest.hashes()
        with self._lock:
            absent = self.missing(sorted(needed))
            if absent:
                return absent
            if os.path.lexists(dest):
                raise FileExistsError(f"{dest} already exists")
            temp = dest.parent / f".{dest.name}.partial-{secrets.token_hex(4)}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._build(manifest, temp, link=link and _may_link())
                os.rename(temp, dest)
            except BaseException:
                _remove_tree(temp)
                raise
            self._touch(needed)
            if self._over_limit():
                self._evict_locked(keep=needed)
        return []

    def _build(self, manifest: Manifest, top: Path, *, link: bool) -> None:
        top.mkdir()
        dir_modes: list[tuple[Path, int]] = []
        for entry in manifest.entries:
            target = top / entry.path
            if entry.kind == DIR:
                target.mkdir(mode=0o700)
                dir_modes.append((target, entry.mode))
            elif entry.kind == LINK:
                os.symlink(entry.target, target)
            elif entry.kind == FILE:
                source = self.path(entry.sha256)
                if link and not entry.mode & 0o111:
                    try:
                        os.link(source, target)
                        continue
                    except OSError as e:
                        if e.errno not in _NO_LINK:
                            raise
                        link = False  # this filesystem will not: copy the rest
                shutil.copyfile(source, target)
                os.chmod(target, entry.mode)
            else:
                raise ManifestError(f"unknown entry kind {entry.kind!r} for {entry.path!r}")
        # deepest first: a read-only directory must not stop its children's chmod
        for directory, mode in reversed(dir_modes):
            os.chmod(directory, mode)

    def _touch(self, digests: Iterable[str]) -> None:
        now = time.time_ns()
        for digest in digests:
            with contextlib.suppress(FileNotFoundError):
                path = self.path(digest)
                os.utime(path, ns=(now, path.stat().st_mtime_ns), follow_symlinks=False)

    # --------------------------------------------------------- keeping it small

    def usage(self) -> tuple[int, int]:
        count = size = 0
        for _digest, st in self._objects.walk():
            count += 1
            size += st.st_size
        return count, size

    def evict(self, keep: Iterable[str] = (), max_bytes: int | None = None) -> Evicted:
        """Remove least recently used objects until the cache holds at most
        `max_bytes` (default: its size). `keep` are in use right now and stay."""
        with self._lock:
            return self._evict_locked(set(keep), max_bytes)

    def _over_limit(self) -> bool:
        """Whether a job start must walk the cache: it may be over its size, or the
        count is old enough that writers this object did not see (another runner
        process, a person) should be taken in."""
        return (self._held is None or self._held > self.max_bytes
                or time.monotonic() - self._walked_at > RECOUNT_AFTER)

    def _evict_locked(self, keep: set[str], max_bytes: int | None = None) -> Evicted:
        limit = self.max_bytes if max_bytes is None else max_bytes
        objects = list(self._objects.walk())
        total = sum(st.st_size for _, st in objects)
        self._walked_at = time.monotonic()
        freed = freed_bytes = 0
        for digest, st in sorted(objects, key=lambda item: item[1].st_atime_ns):
            if total <= limit:
                break
            if digest in keep:
                continue
            self._objects.remove(digest)
            total -= st.st_size
            freed += 1
            freed_bytes += st.st_size
        self._held = total
        freed_bytes += self._objects.clear_stale_temps(3600.0, time.time())
        return Evicted(freed, freed_bytes)


def _may_link() -> bool:
    """Root writes through read-only modes: a root job could change the cache."""
    return os.geteuid() != 0


def _remove_tree(path: Path) -> None:
    """Remove a half-built tree, read-only directories included."""
    if not os.path.lexists(path):
        return
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            with contextlib.suppress(OSError):
                full = os.path.join(dirpath, name)
                if not os.path.islink(full):
                    os.chmod(full, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)

