"""The previous attempt's artifacts, mounted at `$NVQ_ARTIFACTS` and fetched on demand.

The view is an artifacts tree (artifact_tree.py) over a writable local directory, the
*upper* directory. Listing and stat answer from the tree at once, without fetching
anything; reading a file of the tree fetches only the chunks the read touches (through
`Chunks`, i.e. the node's blob cache and the runner's link to the queue host), plus a
window ahead when the reads are sequential. Everything the job writes lands in the
upper directory: a file of the tree opened for writing is first copied up whole (or
not at all when it is truncated), and deleting, renaming, chmod or touching a file of
the tree changes only the tree, which is metadata. So a sync (`snapshot`) describes
the view without reading a byte the queue host already has: the tree's untouched
files keep their chunk lists, and only the upper directory is chunked.

Paths are in exactly one layer: a file in the upper directory is never also in the
tree. Directories may be in both (a directory of the tree that got a new file).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import mfusepy
import msgspec

from .artifact_tree import DIR, FILE, ArtifactTree, Chunk, TreeEntry

READ_AHEAD = 8  # chunks fetched ahead of a sequential reader (~2.5 MiB on random data)
_LOWER = 1 << 40  # lower-file handles live above any real file descriptor


class Chunks(Protocol):
    """The node's way to chunk content: blocking, called from FUSE threads."""

    def fetch(self, hashes: list[str]) -> None: ...  # all in the cache, or OSError

    def prefetch(self, hashes: list[str]) -> None: ...  # start fetching, return at once

    def path(self, digest: str) -> Path: ...  # where a fetched chunk is read


@dataclass
class _Reader:
    entry: TreeEntry
    offsets: list[int]  # start of each chunk
    next_offset: int = 0


def _fail(code: int) -> mfusepy.FuseOSError:
    return mfusepy.FuseOSError(code)


class LazyFS(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, tree: ArtifactTree, upper: Path, chunks: Chunks,
                 on_control: Callable[[str], None] | None = None,
                 owner: tuple[int, int] | None = None) -> None:
        self.upper = upper
        self.chunks = chunks
        self.on_control = on_control
        self.lower: dict[str, TreeEntry] = {e.path: e for e in tree.entries}
        self._lock = threading.RLock()
        self._readers: dict[int, _Reader] = {}
        self._next = _LOWER
        self.uid, self.gid = owner or (os.getuid(), os.getgid())  # every file is theirs

    # --------------------------------------------------------------- layers

    @staticmethod
    def _rel(path: str) -> str:
        return path.lstrip("/")

    def _up(self, rel: str) -> Path:
        return self.upper / rel if rel else self.upper

    def _lower_dir(self, rel: str) -> bool:
        return rel == "" or (rel in self.lower and self.lower[rel].kind == DIR)

    def _is_dir(self, rel: str) -> bool:
        return self._lower_dir(rel) or self._up(rel).is_dir()

    def _upper_parents(self, rel: str) -> None:
        """Create the upper directory's copy of `rel`'s parents (with the tree's modes)."""
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            target = self._up(sub)
            if not target.is_dir():
                entry = self.lower.get(sub)
                target.mkdir(mode=entry.mode if entry else 0o700)

    def _drop_lower(self, rel: str) -> None:
        """Forget `rel` (and, for a directory, what it holds) in the tree."""
        prefix = rel + "/"
        for key in [k for k in self.lower if k == rel or k.startswith(prefix)]:
            del self.lower[key]

    def _copy_up(self, rel: str, keep_data: bool) -> None:
        entry = self.lower[rel]
        self._upper_parents(rel)
        target = self._up(rel)
        temp = target.with_name(f".{target.name}.nvq-copyup")
        if keep_data:
            self.chunks.fetch([c.sha256 for c in entry.chunks])
        with open(temp, "wb") as out:
            if keep_data:
                for chunk in entry.chunks:
                    with open(self.chunks.path(chunk.sha256), "rb") as src:
                        while block := src.read(1 << 20):
                            out.write(block)
        os.chmod(temp, entry.mode)
        os.utime(temp, ns=(entry.mtime_ns, entry.mtime_ns))
        os.replace(temp, target)
        del self.lower[rel]

    # -------------------------------------------------------------- metadata

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        rel = self._rel(path)
        with self._lock:
            entry = self.lower.get(rel)
            up = self._up(rel)
            if entry is None or entry.kind == DIR or rel == "":
                try:
                    st = os.lstat(up)
                except FileNotFoundError:
                    st = None
                if st is not None:
                    keys = ("st_mode", "st_nlink", "st_size", "st_blocks",
                            "st_atime_ns", "st_mtime_ns", "st_ctime_ns")
                    return {"st_uid": self.uid, "st_gid": self.gid,  # the kernel checks these
                            **{k.removesuffix("_ns"): getattr(st, k) for k in keys}}
            if entry is None:
                raise _fail(errno.ENOENT)
        kind = stat.S_IFDIR if entry.kind == DIR else stat.S_IFREG
        return {
            "st_mode": kind | entry.mode, "st_nlink": 2 if entry.kind == DIR else 1,
            "st_uid": self.uid, "st_gid": self.gid, "st_size": entry.size,
            "st_blocks": (entry.size + 511) // 512, "st_atime": entry.mtime_ns,
            "st_mtime": entry.mtime_ns, "st_ctime": entry.mtime_ns,
        }

    def readdir(self, path: str, fh: int) -> list[str]:
        rel = self._rel(path)
        with self._lock:
            if not self._is_dir(rel):
                raise _fail(errno.ENOTDIR)
            names = {".", ".."}
            prefix = rel + "/" if rel else ""
            for key in self.lower:
                if key.startswith(prefix) and "/" not in key[len(prefix):]:
                    names.add(key[len(prefix):])
            up = self._up(rel)
            if up.is_dir():
                names.update(n for n in os.listdir(up) if not n.endswith(".nvq-copyup"))
        return sorted(names)

    def chmod(self, path: str, mode: int) -> int:
        rel = self._rel(path)
        with self._lock:
            entry = self.lower.get(rel)
            if entry is not None:
                self.lower[rel] = _replace(entry, mode=stat.S_IMODE(mode))
            if self._up(rel).exists():
                os.chmod(self._up(rel), mode)
            elif entry is None:
                raise _fail(errno.ENOENT)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        if uid in (-1, self.uid) and gid in (-1, self.gid):
            return 0  # theirs already: a no-op, as on a disk (the runner gives it them)
        raise _fail(errno.EPERM)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        rel = self._rel(path)
        with self._lock:
            entry = self.lower.get(rel)
            self._control(rel)  # `touch .sync` on an existing file
            if entry is not None and entry.kind == FILE:
                mtime = times[1] if times else time.time_ns()
                self.lower[rel] = _replace(entry, mtime_ns=mtime)
                return 0
            up = self._up(rel)
            if up.exists():
                os.utime(up, ns=times) if times else os.utime(up)
            elif entry is None:
                raise _fail(errno.ENOENT)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self.upper)
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")
        return {k: getattr(sv, k) for k in keys}

    # ---------------------------------------------------------- namespace

    def mkdir(self, path: str, mode: int) -> int:
        rel = self._rel(path)
        with self._lock:
            if rel in self.lower or self._up(rel).exists():
                raise _fail(errno.EEXIST)
            self._upper_parents(rel)
            os.mkdir(self._up(rel), mode)
        return 0

    def rmdir(self, path: str) -> int:
        rel = self._rel(path)
        with self._lock:
            if not self._is_dir(rel):
                raise _fail(errno.ENOTDIR if rel in self.lower else errno.ENOENT)
            if len(self.readdir(path, 0)) > 2:
                raise _fail(errno.ENOTEMPTY)
            if self._up(rel).is_dir():
                os.rmdir(self._up(rel))
            self._drop_lower(rel)
        return 0

    def unlink(self, path: str) -> int:
        rel = self._rel(path)
        with self._lock:
            up = self._up(rel)
            if os.path.lexists(up):
                os.unlink(up)
            elif rel in self.lower and self.lower[rel].kind == FILE:
                del self.lower[rel]
            else:
                raise _fail(errno.ENOENT)
        return 0

    def rename(self, old: str, new: str) -> int:
        src, dst = self._rel(old), self._rel(new)
        with self._lock:
            in_upper = os.path.lexists(self._up(src))
            if not in_upper and src not in self.lower:
                raise _fail(errno.ENOENT)
            if self._is_dir(dst) and len(self.readdir(new, 0)) > 2:
                raise _fail(errno.ENOTEMPTY)
            # the target goes from both layers first, as rename(2) replaces it
            if os.path.lexists(self._up(dst)):
                if self._up(dst).is_dir():
                    os.rmdir(self._up(dst))
                else:
                    os.unlink(self._up(dst))
            self._drop_lower(dst)
            if in_upper:
                self._upper_parents(dst)
                os.rename(self._up(src), self._up(dst))
            prefix = src + "/"
            for key in [k for k in self.lower if k == src or k.startswith(prefix)]:
                moved = dst + key[len(src):]
                self.lower[moved] = _replace(self.lower.pop(key), path=moved)
        return 0

    def symlink(self, target: str, source: str) -> int:
        rel = self._rel(target)
        with self._lock:
            if rel in self.lower or os.path.lexists(self._up(rel)):
                raise _fail(errno.EEXIST)
            self._upper_parents(rel)
            os.symlink(source, self._up(rel))
        return 0

    def readlink(self, path: str) -> str:
        return os.readlink(self._up(self._rel(path)))

    # ---------------------------------------------------------------- files

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        rel = self._rel(path)
        with self._lock:
            self._upper_parents(rel)
            if rel in self.lower:
                del self.lower[rel]
            fd = os.open(self._up(rel), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
        self._control(rel)
        return fd

    def open(self, path: str, flags: int) -> int:
        rel = self._rel(path)
        writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC)
        with self._lock:
            entry = self.lower.get(rel)
            if entry is not None and entry.kind == FILE:
                if not writing:
                    offsets, at = [], 0
                    for chunk in entry.chunks:
                        offsets.append(at)
                        at += chunk.size
                    fh = self._next
                    self._next += 1
                    self._readers[fh] = _Reader(entry, offsets)
                    return fh
                self._copy_up(rel, keep_data=not flags & os.O_TRUNC)
            try:
                return os.open(self._up(rel), flags & ~os.O_CREAT)
            except FileNotFoundError:
                raise _fail(errno.ENOENT) from None

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        reader = self._readers.get(fh)
        if reader is None:
            return os.pread(fh, size, offset)
        return self._read_lower(reader, size, offset)

    def _read_lower(self, reader: _Reader, size: int, offset: int) -> bytes:
        entry = reader.entry
        end = min(offset + size, entry.size)
        if offset >= end:
            return b""
        first = _chunk_at(reader.offsets, offset)
        last = _chunk_at(reader.offsets, end - 1)
        needed = entry.chunks[first:last + 1]
        sequential = offset == reader.next_offset
        reader.next_offset = end
        self.chunks.fetch([c.sha256 for c in needed])
        if sequential:
            ahead = entry.chunks[last + 1:last + 1 + READ_AHEAD]
            if ahead:
                self.chunks.prefetch([c.sha256 for c in ahead])
        out = bytearray()
        for index in range(first, last + 1):
            chunk: Chunk = entry.chunks[index]
            start = reader.offsets[index]
            lo = max(offset, start) - start
            hi = min(end, start + chunk.size) - start
            out += self._chunk_range(chunk.sha256, lo, hi)
        return bytes(out)

    def _chunk_range(self, digest: str, lo: int, hi: int) -> bytes:
        for tries in (1, 2):
            try:
                with open(self.chunks.path(digest), "rb") as handle:
                    return os.pread(handle.fileno(), hi - lo, lo)
            except FileNotFoundError:  # the cache evicted it since: fetch it again
                if tries == 2:
                    raise _fail(errno.EIO) from None
                self.chunks.fetch([digest])
        raise _fail(errno.EIO)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        if fh in self._readers:
            raise _fail(errno.EBADF)
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        rel = self._rel(path)
        with self._lock:
            if rel in self.lower and self.lower[rel].kind == FILE:
                self._copy_up(rel, keep_data=length > 0)
        if fh is not None and fh not in self._readers:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._up(rel), length)
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        if fh not in self._readers:
            os.fsync(fh)
        return 0

    def release(self, path: str, fh: int) -> int:
        if self._readers.pop(fh, None) is None:
            os.close(fh)
        return 0

    def _control(self, rel: str) -> None:
        if self.on_control is not None and rel == ".sync":
            self.on_control(rel)

    # ---------------------------------------------------------------- syncing

    def lower_entries(self) -> list[TreeEntry]:
        """The tree's part of the view now (for a sync: these need no reading)."""
        with self._lock:
            return list(self.lower.values())


def _chunk_at(offsets: list[int], offset: int) -> int:
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _replace(entry: TreeEntry, **changes: Any) -> TreeEntry:
    return msgspec.structs.replace(entry, **changes)
