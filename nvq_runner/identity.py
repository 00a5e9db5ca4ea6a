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
    """`<home>/queue.json`: the last queue served and the highest job id it sent."""

    def __init__(self, home: Path) -> None:
        self.path = home / "queue.json"
        try:
            self.mark = msgspec.json.decode(self.path.read_bytes(), type=QueueMark)
        except (OSError, msgspec.DecodeError):
            self.mark = QueueMark()

    def saw(self, queue_id: str, job_id: int) -> None:
        if not queue_id:
            return
        if queue_id == self.mark.queue_id and job_id <= self.mark.max_job_id:
            return
        self.mark = QueueMark(queue_id=queue_id, max_job_id=job_id)
        tmp = self.path.with_name(".queue.json.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(msgspec.json.encode(self.mark))
            os.replace(tmp, self.path)
        except OSError as exc:  # kept in memory; written with the next new id
            log.warning("cannot write %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
