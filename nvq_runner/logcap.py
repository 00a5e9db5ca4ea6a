"""Keeping a job's log within its size cap: when a log passes the cap, the middle is
cut out, keeping the head (how the job began) and the newest output.

The job writes its log itself through an O_APPEND descriptor, so after the runner
shortens the file the job's next write lands at the new end. Output written in the
instant between copying the newest part forward and truncating is lost; that is the
price of bounding disk use without the job's cooperation.

The record of the order the job wrote its two streams in (write_order) is held under
the same cap the same way, in whole records.
"""

from __future__ import annotations

import os
from pathlib import Path

from .jobfiles import JobDir, size_text

HEAD = 1024 * 1024  # bytes kept from the start of the log
CHUNK = 1024 * 1024


def marker(cap: int) -> bytes:
    return f"\n[nvq: output cut here to keep the log under {size_text(cap)}]\n".encode()


def over_cap(path: Path, cap: int) -> bool:
    try:
        return path.stat().st_size > cap
    except OSError:
        return False


def cut_log(path: Path, cap: int) -> bool:
    """Cut the middle out of `path` if it is over `cap` bytes; True when it was."""
    return _cut(path, cap, marker(cap), 1)


def cut_records(path: Path, cap: int, whole: int) -> bool:
    """`cut_log` for a file of `whole`-byte records: the cut keeps whole records and
    marks nothing (a marker would read as records)."""
    return _cut(path, cap, b"", whole)


def _cut(path: Path, cap: int, mark: bytes, whole: int) -> bool:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        if size <= cap:
            return False
        size -= size % whole
        head = min(HEAD, cap // 4) // whole * whole
        keep = max(whole, cap // 2 // whole * whole)
        os.pwrite(fd, mark, head)
        dst, src = head + len(mark), size - keep
        while src < size:
            data = os.pread(fd, min(CHUNK, size - src), src)
            if not data:
                break
            os.pwrite(fd, data, dst)
            src += len(data)
            dst += len(data)
        os.ftruncate(fd, dst)
        return True
    finally:
        os.close(fd)


def cut_logs(jobs: list[tuple[JobDir, int]]) -> list[bool]:
    """For each (job, cap): whether its stdout or stderr had to be cut."""
    return [any([cut_log(d.stdout, cap), cut_log(d.stderr, cap)]) for d, cap in jobs]
