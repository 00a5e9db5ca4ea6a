"""Is the node's owner at the keyboard? Read from utmp and terminal access times, the
way `w` does it, with no external command.

A login session counts when utmp has a USER_PROCESS record for the owner whose
process is alive and whose terminal (`/dev/<ut_line>`) was read from or written to
(its atime) within `idle` seconds. Sessions without a terminal device (a graphical
login on ":0") carry no idle time and are not counted: mark such a node busy by hand
with `nvq queue busy NODE on`.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import msgspec

UTMP = Path("/var/run/utmp")
USER_PROCESS = 7
# glibc's struct utmp on Linux (x86-64 and aarch64 alike): 384 bytes.
_RECORD = struct.Struct("<hxxi32s4s32s256s2hi2i4i20x")


class Session(msgspec.Struct, frozen=True):
    user: str
    line: str  # terminal, relative to /dev
    pid: int


class Activity(msgspec.Struct, frozen=True):
    busy: bool
    sessions: int  # the owner's sessions used within the idle limit
    idle: Optional[float]  # seconds since the owner's most recent terminal use


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def read_sessions(data: bytes) -> Iterator[Session]:
    """The interactive login sessions recorded in a utmp file's bytes."""
    for offset in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        fields = _RECORD.unpack_from(data, offset)
        ut_type, pid, line, _id, user = fields[0], fields[1], fields[2], fields[3], fields[4]
        if ut_type == USER_PROCESS and _text(user):
            yield Session(user=_text(user), line=_text(line), pid=pid)


def activity(
    owner: str,
    idle_limit: float,
    *,
    utmp: Path = UTMP,
    dev: Path = Path("/dev"),
    now: float | None = None,
    alive: bool = True,
) -> Activity:
    """The owner's activity now. `alive` checks each session's pid under /proc (off
    for synthetic utmp files in tests)."""
    try:
        data = utmp.read_bytes()
    except OSError:
        return Activity(busy=False, sessions=0, idle=None)
    now = time.time() if now is None else now
    recent: float | None = None
    active = 0
    for s in read_sessions(data):
        if s.user != owner or not s.line or (alive and not os.path.exists(f"/proc/{s.pid}")):
            continue
        try:
            idle = max(0.0, now - (dev / s.line).stat().st_atime)
        except OSError:
            continue  # no terminal device: idle time unknown
        recent = idle if recent is None else min(recent, idle)
        if idle < idle_limit:
            active += 1
    return Activity(busy=active > 0, sessions=active, idle=recent)


def utmp_record(user: str, line: str, pid: int, ut_type: int = USER_PROCESS) -> bytes:
    """One utmp record (for tests and tools that write synthetic files)."""
    return _RECORD.pack(
        ut_type, pid, line.encode(), b"", user.encode(), b"", 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
