"""Recognising, after a runner restart, the wrapper process of an attempt that a
previous runner started."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from . import procfs
from .jobfiles import AttemptRecord, JobDir
from .spawn import PTYHOST, PTYHOST_COPY, WRAPPER, WRAPPER_COPY


def reopen(rec: AttemptRecord) -> int | None:
    """A pidfd for the attempt's wrapper if that process still runs (same boot)."""
    if not rec.pid:
        return None
    try:
        pidfd = os.pidfd_open(rec.pid)
    except OSError:
        return None
    # Checked after opening the pidfd: if the pid was reused in between, the start
    # time differs and the pidfd is not ours to watch.
    if rec.start_ticks is None or procfs.start_ticks(rec.pid) != rec.start_ticks:
        os.close(pidfd)
        return None
    return pidfd


def is_wrapper(pid: int, d: JobDir) -> bool:
    """Whether `pid` runs the wrapper of job directory `d`: the installed one, or the
    copy a job run as another user runs from its own directory."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    scripts = (str(WRAPPER).encode(), str(d.path / WRAPPER_COPY).encode(),
               str(PTYHOST).encode(), str(d.path / PTYHOST_COPY).encode())
    return any(s in cmdline for s in scripts) and str(d.path).encode() in cmdline


def attempts(root: Path) -> Iterator[tuple[AttemptRecord, JobDir]]:
    """Every attempt record under the jobs directory `root` that sits in its own job's
    directory, with that directory."""
    for path in sorted(root.glob("*/attempt.json")):
        rec = JobDir.load_record(path)
        if rec is None:
            continue
        d = JobDir(root, rec.job_id, rec.queue_id, rec.nonce)
        if d.path == path.parent:
            yield rec, d
