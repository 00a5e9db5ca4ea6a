"""The runner process itself: one per home (a lock), optionally detached, private
by umask, with room for a descriptor per job, logging to stderr."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import resource
import sys
from pathlib import Path

from .server import Runner


def serve(home: Path, detach: bool = False) -> int:
    """Run the runner for `home` until SIGTERM/SIGINT. Returns 0 at once when another
    runner holds the home. With `detach`, fork into a new session once the lock is
    held and return in the parent, so whoever started us can reap us at once."""
    # Everything the runner makes is its owner's alone (files 0600, directories and
    # the socket 0700), whatever umask it was started with; jobs get that umask back.
    job_umask = os.umask(0o077)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    lock_fd = os.open(home / "runner.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0
    if detach:
        if os.fork() != 0:
            os._exit(0)  # the child inherits the lock with the open file description
        os.setsid()
    os.chdir(home)
    # One pidfd per running job: hundreds of jobs outgrow the usual soft limit of 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    (home / "runner.pid").write_text(f"{os.getpid()}\n")
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(_main(home, job_umask))
    finally:
        with contextlib.suppress(OSError):
            if (home / "runner.pid").read_text().strip() == str(os.getpid()):
                (home / "runner.pid").unlink()
    return 0


async def _main(home: Path, job_umask: int) -> None:
    await Runner(home, job_umask).run()
