"""Machines that come and go: pure decisions about jobs whose node went down, became
busy, or was only borrowed. No I/O and no clock (the caller passes `now`).

* A node unreachable past `node_grace` gives its running jobs back to the queue
  (`reassign`): `pending` again, keeping their place in line, with a kill owed to the
  old attempt (a `Reap`) in case the node returns with it still running. A job
  submitted with `--no-reassign` is `lost` instead (`job_lost` raises the alert).
  Neither spends a `--retries` restart: the machine was at fault, not the job.
* Both were guesses: an exit the runner recorded wins over them when the node returns
  (`nvq.domain.exits` decides between attempts; a lost job's exit is
  `transitions.exited`).
* A node removed from config.toml is never heard from again (`node_removed`): its
  jobs go back to the queue or are lost at once, and no kill is owed to it.
* A busy node (its owner is at the keyboard) stops other users' jobs, and a job that
  outruns `--max-runtime` on a node it borrowed is stopped too (`preempt`): the job is
  `pending` at once, but is not placed again until the old attempt has exited and its
  artifacts are synced (see `nvq.daemon.machines.reassign`). Its next attempt avoids the
  node whose time it ran out while another node could hold it (`steer_clear`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import msgspec

from nvq.domain.lanes import parse_lane
from nvq.domain.placement import NodeSlot, PendingJob, place
from nvq.model import JobRecord, JobState, NewEvent, Outcome, Reap

# Reaps after which no job is placed on the node until the old attempt's exit is
# confirmed: its process may still hold the cards.
FENCING_REASONS = frozenset({"reassigned", "orphan", "lost", "superseded", "fenced"})
# Reaps after which the job itself waits for its old attempt's exit (and final
# artifact sync) before it may be placed again (`moved`: `nvq job move`).
# `fenced`: its runner stopped it, the lease from the daemon having lapsed (fencing.py).
STOPPING_REASONS = frozenset({"preempted", "moved", "fenced"})


def back_to_queue(job: JobRecord, reason: str) -> JobRecord:
    return msgspec.structs.replace(
        job, state=JobState.PENDING, node=None, gpus=[], pid=None, progress=None, reason=reason
    )


def reassign(job: JobRecord, node: str, why: str, now: float) -> Outcome:
    """The job's node is down: run it elsewhere (or, with --no-reassign, mark it lost)."""
    if job.state is not JobState.RUNNING or job.node != node:
        return Outcome()
    data = {"attempt": job.attempt, "reason": why}
    if job.spec.no_reassign:
        reap = Reap(job_id=job.id, attempt=job.attempt, node=node, reason="lost")
        new = msgspec.structs.replace(
            job, state=JobState.LOST, ended_at=now, reason=f"lost: {why} (--no-reassign)"
        )
        lost = NewEvent("job_lost", job.id, node, {**data, "no_reassign": True})
        return Outcome(new, [lost], reap)
    reap = Reap(job_id=job.id, attempt=job.attempt, node=node, reason="reassigned")
    new = back_to_queue(job, f"reassigned: {why}")
    return Outcome(new, [NewEvent("job_reassigned", job.id, node, data)], reap)


def node_removed(job: JobRecord, node: str, configured: Collection[str], now: float) -> Outcome:
    """The job runs on a node that is no longer in config.toml: nobody will hear from
    it again. Back in line when it may run elsewhere (like a node that went down), else
    lost; no kill is owed (the queue no longer reaches that node)."""
    if job.state is not JobState.RUNNING or job.node != node:
        return Outcome()
    why = f"node {node} is no longer in config.toml"
    wanted = parse_lane(job.spec.lane)[0] if job.spec.lane is not None else job.spec.node
    elsewhere = any(n.startswith(wanted or "") for n in configured)
    data = {"attempt": job.attempt, "reason": why}
    if job.spec.no_reassign or not elsewhere:
        new = msgspec.structs.replace(job, state=JobState.LOST, ended_at=now, reason=f"lost: {why}")
        return Outcome(new, [NewEvent("job_lost", job.id, node, data)])
    new = back_to_queue(job, f"reassigned: {why}")
    return Outcome(new, [NewEvent("job_reassigned", job.id, node, data)])


def preempt(job: JobRecord, why: str, by: int | None = None) -> Outcome:
    """Stop a running attempt (its --signal or TERM, grace, KILL) and put the job back
    in line. `by`: the more urgent job it makes room for (`nvq.domain.preemption`)."""
    if job.state is not JobState.RUNNING or job.node is None:
        return Outcome()
    reap = Reap(job_id=job.id, attempt=job.attempt, node=job.node, reason="preempted")
    new = back_to_queue(job, f"preempted: {why}")
    data: dict[str, object] = {"attempt": job.attempt, "reason": why}
    if by is not None:
        data["by"] = by
    ev = NewEvent("job_preempted", job.id, job.node, data)
    return Outcome(new, [ev], reap)


def borrowed(job: JobRecord, owner: str | None) -> bool:
    """A job runs on a borrowed node when the node has an owner who is someone else."""
    return owner is not None and job.user != owner


def runtime_exceeded(job: JobRecord, owner: str | None, now: float) -> bool:
    """--max-runtime binds only on a borrowed node (elsewhere --timeout is the limit)."""
    if job.spec.max_runtime is None or job.state is not JobState.RUNNING:
        return False
    began = job.started_at or job.dispatched_at
    return began is not None and borrowed(job, owner) and now - began > job.spec.max_runtime


def steer_clear(
    job: PendingJob,
    avoid: str,
    slots: Sequence[NodeSlot],
    *,
    headroom_mb: int,
    max_cpu_jobs: int,
) -> PendingJob:
    """A job that just ran out its `--max-runtime` on the borrowed node `avoid`: its
    next attempt goes to another node while one that is up (accepting jobs) could hold
    it, even if it must wait for room there, as any job waits; back to `avoid` only
    when no such node could. The job restricted to those nodes, or unchanged."""
    allowed = job.nodes if job.nodes is not None else tuple(s.name for s in slots)
    up = {s.name for s in slots if s.accepting}
    others = tuple(n for n in allowed if n != avoid and n in up)
    if avoid not in allowed or not others:
        return job
    elsewhere = msgspec.structs.replace(job, nodes=others)
    trial = place(slots, [elsewhere], headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs)
    return job if trial.unschedulable else elsewhere


def busy_victims(jobs_on_node: Iterable[JobRecord], owner: str | None) -> list[JobRecord]:
    """The running jobs a node that just turned busy must give back: other users'."""
    return [j for j in jobs_on_node if j.state is JobState.RUNNING and borrowed(j, owner)]


def effective_busy(mode: str, reported: bool | None) -> bool:
    """`on`/`off` set by hand win; `auto` follows the runner's report (unknown: idle)."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    return bool(reported)
