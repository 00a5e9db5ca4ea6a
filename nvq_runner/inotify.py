"""The kernel's inotify queue, through libc (the standard library has no binding): one
descriptor, watches added and removed, and a read of the queue split into its events.
Runs on the node's Python (3.9+)."""

from __future__ import annotations

import ctypes
import os
import select
import struct
from pathlib import Path

IN_MODIFY = 0x00000002
IN_IGNORED = 0x00008000  # the watch is gone (removed, or its directory deleted)
IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length
READ_SIZE = 256 * 1024

Event = tuple[int, int, bytes]  # (wd, mask, name)


class Inotify:
    def __init__(self) -> None:
        """Raises OSError where this kernel or libc offers none."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_CLOEXEC)
        except (OSError, AttributeError) as exc:
            raise OSError(f"no inotify: {exc}") from None
        if fd < 0:
            raise OSError(ctypes.get_errno(), "no inotify")
        self._libc = libc
        self.fd: int = fd

    def add_watch(self, path: Path, mask: int) -> int:
        """The new watch's descriptor (the same one again for the same path)."""
        wd: int = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return wd

    def rm_watch(self, wd: int) -> None:
        """Its IN_IGNORED event follows, after every event of the watch before it."""
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> bytes:
        return os.read(self.fd, READ_SIZE)

    def read_ready(self) -> bytes:
        """What the queue holds now (one read), without waiting."""
        return self.read() if select.select([self.fd], [], [], 0)[0] else b""


def events(data: bytes) -> list[Event]:
    """Each event of one read of the queue, in order."""
    out: list[Event] = []
    pos = 0
    while pos + _EVENT.size <= len(data):
        wd, mask, _, size = _EVENT.unpack_from(data, pos)
        name = data[pos + _EVENT.size : pos + _EVENT.size + size].split(b"\0", 1)[0]
        pos += _EVENT.size + size
        out.append((wd, mask, name))
    return out
