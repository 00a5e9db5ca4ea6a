"""Remembered file hashes for snapshots: a file whose (path, size, mtime_ns, inode) is
as it was last time is not read again, so re-submitting an unchanged 200 MiB project
costs a directory walk, not 200 MiB of hashing.

A file modified within the clock's granularity of the moment it was hashed could change
again without changing its mtime ("racy git"): such entries are not remembered, so the
next snapshot reads them again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

import msgspec

from nvq_runner.objects import FILE_MODE, make_private_dir

RACY_NS = 2_000_000_000
MAX_ENTRIES = 500_000

# path → (size, mtime_ns, inode, sha256)
_Table = dict[str, tuple[int, int, int, str]]
_decoder = msgspec.msgpack.Decoder(_Table)
_encoder = msgspec.msgpack.Encoder()


class StatCache:
    def __init__(self, table: _Table) -> None:
        self._old = table
        self._new: _Table = {}
        self._now_ns = time.time_ns()

    @classmethod
    def empty(cls) -> StatCache:
        return cls({})

    @classmethod
    def load(cls, path: Path) -> StatCache:
        try:
            return cls(_decoder.decode(path.read_bytes()))
        except (OSError, msgspec.DecodeError):
            return cls.empty()  # a lost or damaged cache only costs a re-read

    def get(self, path: Path, st: os.stat_result) -> str | None:
        row = self._old.get(str(path))
        if row is None or row[:3] != (st.st_size, st.st_mtime_ns, st.st_ino):
            return None
        self._new[str(path)] = row
        return row[3]

    def put(self, path: Path, st: os.stat_result, digest: str) -> None:
        if st.st_mtime_ns > self._now_ns - RACY_NS:
            return
        self._new[str(path)] = (st.st_size, st.st_mtime_ns, st.st_ino, digest)

    def save(self, path: Path, *, keep_under: Path) -> None:
        """Write this walk's rows, plus the rows of other trees (those under
        `keep_under` that this walk did not see are gone from disk or now ignored)."""
        prefix = str(keep_under).rstrip("/") + "/"
        table = dict(self._new)
        for key, row in self._old.items():
            if len(table) >= MAX_ENTRIES:
                break
            if not key.startswith(prefix):
                table.setdefault(key, row)
        make_private_dir(path.parent)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            with os.fdopen(fd, "wb") as handle:
                handle.write(_encoder.encode(table))
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink()
