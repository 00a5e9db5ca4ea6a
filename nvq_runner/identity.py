"""Which queue a runner serves, and the directory of a job attempt's identity.

A queue restored from a backup reuses job ids, so a job id alone cannot name an
attempt: the daemon may send `Start.queue_id` and a per-job `Start.nonce`, and an
attempt is then known by (queue_id, job_id, nonce, attempt). Its directory is
`jobs/<queue_id[:8]>-<job_id>-<nonce[:8]>/` (attempts of one identity share it, as
they share `jobs/<job_id>/` when both are empty). The runner remembers the queue id
it served last and the highest job id it saw for it, reported in `Hello`, so a
restored daemon can carry on numbering after them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

import msgspec

log = logging.getLogger(__name__)


def dir_name(job_id: int, queue_id: str = "", nonce: str = "") -> str:
    if not queue_id and not nonce:
        return str(job_id)
    return f"{_safe(queue_id)[:8]}-{job_id}-{_safe(nonce)[:8]}"


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


class QueueMark(msgspec.Struct):
    queue_id: str = ""
    max_job_id: int = 0


class QueueMemory:
    """`<home>/queue.json`: the last queue served and the highest job id it sent.

    A new queue id is written at once. A higher job id is written at most once a
    second: a file replaced per job made a fresh inode per job, which on a busy node
    was a real share of the runner's work. A runner killed before the write loses
    nothing, because loading also takes the highest id among the job directories of
    the queue (each made before its job ran)."""

    WRITE_EVERY = 1.0

    def __init__(self, home: Path) -> None:
        self.path = home / "queue.json"
        try:
            self.mark = msgspec.json.decode(self.path.read_bytes(), type=QueueMark)
        except (OSError, msgspec.DecodeError):
            self.mark = QueueMark()
        seen = highest_job_id(home / "jobs", self.mark.queue_id)
        if seen > self.mark.max_job_id:
            self.mark = QueueMark(queue_id=self.mark.queue_id, max_job_id=seen)
        self._due: asyncio.TimerHandle | None = None

    def saw(self, queue_id: str, job_id: int) -> None:
        if not queue_id:
            return
        if queue_id == self.mark.queue_id and job_id <= self.mark.max_job_id:
            return
        new_queue = queue_id != self.mark.queue_id
        self.mark = QueueMark(queue_id=queue_id, max_job_id=job_id)
        if new_queue:
            self.flush()
        elif self._due is None:
            self._due = asyncio.get_running_loop().call_later(self.WRITE_EVERY, self.flush)

    def flush(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
        tmp = self.path.with_name(".queue.json.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(msgspec.json.encode(self.mark))
            os.replace(tmp, self.path)
        except OSError as exc:  # kept in memory; written with the next new id
            log.warning("cannot write %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()


def highest_job_id(jobs: Path, queue_id: str) -> int:
    """The highest job id among `jobs/<queue_id[:8]>-<id>-<nonce>` directories."""
    if not queue_id:
        return 0
    prefix = _safe(queue_id)[:8] + "-"
    best = 0
    try:
        with os.scandir(jobs) as entries:
            for entry in entries:
                if entry.name.startswith(prefix):
                    middle = entry.name[len(prefix):].partition("-")[0]
                    if middle.isdigit():
                        best = max(best, int(middle))
    except OSError:
        return 0
    return best
