"""A job's host-memory limit (`--memory`): a cgroup v2 memory limit where the runner
may create one, else an address-space rlimit, set in the child before it execs.

The cgroup catches what a job really uses (resident memory) and its OOM kill is a
SIGKILL; the rlimit caps virtual address space, so it is stricter (a job maps more
than it touches) and surfaces as allocation errors. Either way a job over its limit
fails instead of taking the node down."""

from __future__ import annotations

import contextlib
import functools
import os
import resource
from collections.abc import Callable
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")


@functools.cache
def _own_cgroup() -> Path | None:
    """The runner's cgroup, read once: it is asked twice per job exit, and a runner
    is not moved between cgroups while it runs."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return _ROOT / line[3:].lstrip("/")
    except OSError:
        pass
    return None


def make_cgroup(name: str, limit_mb: int) -> Path | None:
    """A child cgroup of the runner's own with `memory.max` set; None when cgroup v2
    or its memory controller is not ours to use (then the rlimit applies)."""
    own = _own_cgroup()
    if own is None or not (_ROOT / "cgroup.controllers").exists():
        return None
    group = own / name
    try:
        group.mkdir(exist_ok=True)
        (group / "memory.max").write_text(str(limit_mb * 1024 * 1024))
        with contextlib.suppress(OSError):
            (group / "memory.swap.max").write_text("0")
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group


def preexec(limit_mb: int | None, group: Path | None) -> Callable[[], None] | None:
    """What the child runs before exec: join the cgroup, or set RLIMIT_AS."""
    if limit_mb is None:
        return None
    limit = limit_mb * 1024 * 1024
    procs = str(group / "cgroup.procs") if group is not None else None

    def apply() -> None:
        if procs is not None:
            try:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                    return
                finally:
                    os.close(fd)
            except OSError:
                pass
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def remove_cgroup(name: str) -> None:
    """Drop a finished attempt's cgroup (a no-op where none was made)."""
    own = _own_cgroup()
    if own is not None:
        with contextlib.suppress(OSError):
            (own / name).rmdir()


def oom_kills(name: str) -> int:
    """How many processes of cgroup `name` the kernel's OOM killer killed (its
    `memory.events` oom_kill counter); 0 where the job has no cgroup of its own. A
    job's SIGKILL is only called an OOM kill on this evidence, never guessed."""
    own = _own_cgroup()
    if own is None:
        return 0
    try:
        text = (own / name / "memory.events").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0
