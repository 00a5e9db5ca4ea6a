"""`--signal SIG@DELAY`: the signal a job gets DELAY before its timeout ends it, sent by
the runner on its own timer (as it enforces the timeout), journaled as `JobSignalled`
so the queue records it once, whatever the link does meanwhile."""

from __future__ import annotations

import logging
import signal
import time
from functools import partial
from typing import Callable, Protocol, TypeVar

from .jobfiles import AttemptRecord
from .protocol import JobSignalled, JournaledEvent

log = logging.getLogger(__name__)


class Attempt(Protocol):
    rec: AttemptRecord


A = TypeVar("A", bound=Attempt)
A_contra = TypeVar("A_contra", bound=Attempt, contravariant=True)


class Manager(Protocol[A_contra]):
    """What this needs of the job manager (nvq_runner.jobs.JobManager), named here so
    that this module does not import it."""

    def _save(self, run: A_contra) -> None: ...
    def _signal(self, run: A_contra, sig: signal.Signals) -> None: ...
    def _emit(self, event: Callable[[int], JournaledEvent]) -> None: ...


def send(jobs: Manager[A], run: A) -> None:
    """Send the attempt's `--signal` to it, once: not after it was told to stop (its
    SIGTERM is on its way), nor again after a runner restart. Its timer is cancelled
    when the attempt ends."""
    rec = run.rec
    if rec.signalled or rec.kill_reason is not None or not rec.pid or not rec.signal:
        return
    rec.signalled = True
    jobs._save(run)  # before the signal: a restarted runner must not send it twice
    jobs._signal(run, signal.Signals(rec.signal))
    log.info("job %s attempt %s: sent signal %s before its timeout",
             rec.job_id, rec.attempt, rec.signal)
    jobs._emit(partial(JobSignalled, job_id=rec.job_id, attempt=rec.attempt,
                       signal=rec.signal, at=time.time(), end_at=rec.deadline or 0.0))
