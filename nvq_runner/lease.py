"""The runner's lease from its daemon: how long it may go without hearing from it
before it stops the jobs the daemon would run elsewhere.

The daemon tells the length (`Heartbeat.lease`, derived from `node_grace`, see
`nvq.config.lease`) and keeps the link busy with a heartbeat every few seconds; any
frame it sends renews the lease. The runner measures the silence on its own
monotonic clock, by its own timer: a frozen link, a dead SSH session and a dead
daemon look the same from here, and none of them may be needed to notice. A runner
that was never told a lease (an older daemon) never fences.
"""

from __future__ import annotations

import asyncio
import logging
import select
import time
from collections.abc import Callable
from functools import partial

from .jobs import EventSink, JobManager
from .protocol import AttemptFenced

log = logging.getLogger("nvq_runner")


class Lease:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.seconds: float | None = None  # None: no daemon ever granted one
        self._heard = clock()

    def renew(self, seconds: float | None = None) -> None:
        """A frame came from the daemon (a `Heartbeat` also says the lease's length)."""
        self._heard = self._clock()
        if seconds is not None and seconds > 0:
            self.seconds = seconds

    def silent_for(self) -> float:
        return self._clock() - self._heard

    def lapsed(self) -> bool:
        return self.seconds is not None and self.silent_for() >= self.seconds

    def tick(self) -> float:
        """How often to look: a small part of the lease, so a lapse is acted on well
        within the margin `node_grace` leaves for it."""
        if self.seconds is None:
            return 0.5
        return max(0.05, min(0.5, self.seconds / 10))


def fence(jobs: JobManager, emit: EventSink, lease: float, silent_for: float) -> list[tuple[int, int]]:
    """The lease lapsed: for each reassignable attempt not already ending, journal
    `AttemptFenced`, then end it as a `Kill` would (SIGTERM, its kill grace, SIGKILL).
    `--no-reassign` jobs run on: they are never run elsewhere."""
    runs = [r for r in jobs.running.values()
            if r.rec.reassign and r.rec.kill_reason is None and not r.rec.done
            and not _exited(r.pidfd)]
    for run in runs:
        rec = run.rec
        emit(partial(AttemptFenced, job_id=rec.job_id, attempt=rec.attempt, at=time.time(),
                     silent_for=silent_for, lease=lease))
        jobs.terminate(run, "fenced", rec.kill_grace)
    return [(r.rec.job_id, r.rec.attempt) for r in runs]


def _exited(pidfd: int) -> bool:
    """The process is gone, its exit not yet handled (the lease found lapsed in the
    same turn of the loop, e.g. by a runner waking from SIGSTOP): it ran to its own
    end, which must stand, not be taken for a fencing."""
    try:
        return bool(select.select([pidfd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


async def keep(lease: Lease, fence: Callable[[float, float], list[tuple[int, int]]]) -> None:
    """Stop reassignable jobs once the daemon has been silent for the lease, by this
    runner's own timer (`fence(lease, silent_for)` returns the attempts it stopped)."""
    while True:
        await asyncio.sleep(lease.tick())
        if lease.seconds is None or not lease.lapsed():
            continue
        silent = lease.silent_for()
        try:
            fenced = fence(lease.seconds, silent)
        except Exception:
            log.exception("fencing jobs failed")
            continue
        for job_id, attempt in fenced:
            log.warning("no word from the daemon for %.1fs (lease %gs): stopping job %s "
                        "attempt %s, which the queue will run elsewhere",
                        silent, lease.seconds, job_id, attempt)
