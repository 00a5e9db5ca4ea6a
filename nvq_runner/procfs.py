"""Small readers of /proc: process identity, sessions, owners and host memory."""

from __future__ import annotations

import os
import pwd
import time
from functools import lru_cache

# When this process started, near enough: the runner imports this module first thing
# (its `Hello` says it, for `nvq node status`'s uptime).
STARTED_AT = time.time()


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat from field 3 (state) on; the command name may hold
    spaces and parentheses, so split after the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    end = raw.rfind(b")")
    if end < 0:
        return None
    return raw[end + 2 :].decode("ascii", "replace").split()


def start_ticks(pid: int) -> int | None:
    """Field 22, the process start time: with the pid it names one process for good."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def session_id(pid: int) -> int | None:
    """Field 6. A job's processes share the session its wrapper leads."""
    fields = _stat_fields(pid)
    return int(fields[3]) if fields and len(fields) > 3 else None


def is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[:1] == ["Z"]


@lru_cache(maxsize=1024)
def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def process_user(pid: int) -> str:
    try:
        return _user_name(os.stat(f"/proc/{pid}").st_uid)
    except OSError:
        return "?"


def meminfo_mb(key: str) -> int:
    """A /proc/meminfo figure (given in kB there) in MiB; 0 when unreadable."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == key:
                    return int(rest.split()[0]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except OSError:
        return os.cpu_count() or 1
