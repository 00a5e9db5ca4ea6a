"""Waiting for a stopped daemon's process to be gone, for `daemon stop`, `queue
restore` and `node stop`. A daemon that exited but is not reaped yet is a zombie,
which `kill(pid, 0)` still finds: it counts as gone, or the wait would last until the
parent reaps it (seconds for PID 1 here, never where init does not reap)."""

from __future__ import annotations

import os
import time

WAIT = 20.0  # seconds a clean stop may take: the daemon commits and closes first


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process that holds the pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc here: kill's answer stands
    return state not in (b"Z", b"X")


def wait_gone(pid: int | None, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while pid is not None and time.monotonic() < deadline and running(pid):
        time.sleep(0.02)
