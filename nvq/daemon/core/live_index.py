"""Indexes over the daemon's live jobs, kept up to date by every commit, so that what
runs after each event (a placement pass, the per-node view) looks only at what it
needs: the pending queue grouped by shape, the running jobs, the jobs in lanes. A
queue of 100,000 waiting jobs then costs an exit what a queue of ten does."""

from __future__ import annotations

from nvq.domain.pending_groups import PendingGroups
from nvq.model import JobRecord, JobState

# Jobs that count against `max_queued_jobs`: waiting in any way.
QUEUED = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


class LiveIndex:
    def __init__(self) -> None:
        self.pending = PendingGroups()
        self.running: dict[int, JobRecord] = {}
        self.lanes: dict[int, JobRecord] = {}  # live jobs that are in a lane, any state
        self.queued_by_user: dict[str, int] = {}  # waiting jobs per OS user
        self._queued: dict[int, str] = {}  # waiting job → its user

    def update(self, job: JobRecord) -> None:
        """The job's new version, live (pending, running, held, paused)."""
        self.pending.update(job)
        if job.state is JobState.RUNNING:
            self.running[job.id] = job
        else:
            self.running.pop(job.id, None)
        if job.spec.lane is not None:
            self.lanes[job.id] = job
        else:
            self.lanes.pop(job.id, None)
        if job.state in QUEUED:
            if job.id not in self._queued:
                self._queued[job.id] = job.user
                self.queued_by_user[job.user] = self.queued_by_user.get(job.user, 0) + 1
        else:
            self._unqueue(job.id)

    def _unqueue(self, job_id: int) -> None:
        user = self._queued.pop(job_id, None)
        if user is not None:
            self.queued_by_user[user] -= 1

    def forget(self, job_id: int) -> None:
        """The job is no longer live (it ended, or was deleted)."""
        self.pending.drop(job_id)
        self.running.pop(job_id, None)
        self.lanes.pop(job_id, None)
        self._unqueue(job_id)
