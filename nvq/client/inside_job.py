"""Inside a running job, `$NVQ_SOCKET` is the queue: the runner that runs the job relays
it to the daemon that placed it (nvq_runner/job_socket.py), which answers as the job's
owner. The client then talks there whatever `NVQ_HOME` says, never starts a daemon
and never forwards to a `[remote]` queue host."""

from __future__ import annotations

import functools
import os
from pathlib import Path

MAX_SUN_PATH = 100  # nvq_runner.job_socket.MAX_SUN_PATH


@functools.cache
def job_socket() -> Path | None:
    """The job's socket, as a path `connect` takes: a path too long for sockaddr_un
    is reached through a handle on its directory, kept open for this process."""
    value = os.environ.get("NVQ_SOCKET")
    if not value:
        return None
    if len(value) <= MAX_SUN_PATH:
        return Path(value)
    path = Path(value)
    try:
        fd = os.open(path.parent, os.O_PATH)
    except OSError:
        return path  # connecting says why
    return Path(f"/proc/self/fd/{fd}") / path.name
