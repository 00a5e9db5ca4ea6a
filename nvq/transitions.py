"""Job state transitions as pure functions: (job, what happened) → (new job, events).

No I/O and no clock: the caller passes `now`. The daemon commits what these return,
then acts on it. A function returns `None` for the job when the event does not apply
(a stale attempt, a replay of something already settled), so the caller only
acknowledges it.
"""

from __future__ import annotations

import msgspec

from nvq.model import Job, JobSpec, JobState, Reap
from nvq.store import NewEvent
from nvq_runner.protocol import JobExited, JobLost, JobStarted, LaunchFailed


class TransitionError(Exception):
    """The requested change is not allowed in the job's state (message for the user)."""


Outcome = tuple[Job | None, list[NewEvent]]


def new_job(spec: JobSpec, *, user: str, now: float) -> Job:
    return Job(
        id=0,
        name=spec.name or _default_name(spec.command),
        state=JobState.PENDING,
        command=spec.command,
        user=user,
        submitter=spec.submitter or user,
        created_at=now,
        gpus_requested=spec.gpus,
        vram_mb=spec.vram_mb,
        node_request=spec.node,
        priority=spec.priority,
        timeout=spec.timeout,
        env=dict(spec.env),
        workdir=spec.workdir,
        tags=list(spec.tags),
        note=spec.note,
        after=sorted(set(spec.after)),
        after_any=sorted(set(spec.after_any)),
    )


def _default_name(command: str) -> str:
    words = command.split()
    return words[0].rsplit("/", 1)[-1][:40] if words else "job"


def dispatch(job: Job, *, node: str, gpus: list[int], now: float) -> Outcome:
    if job.state is not JobState.PENDING:
        return None, []
    new = msgspec.structs.replace(
        job,
        state=JobState.RUNNING,
        attempt=job.attempt + 1,
        node=node,
        gpus=list(gpus),
        pid=None,
        dispatched_at=now,
        started_at=None,
        ended_at=None,
        exit_code=None,
        signal=None,
        reason=None,
        stderr_tail=None,
    )
    ev = NewEvent("job_dispatched", job.id, node, {"attempt": new.attempt, "gpus": new.gpus})
    return new, [ev]


def started(job: Job, ev: JobStarted, node: str) -> Outcome:
    if job.state is not JobState.RUNNING or job.attempt != ev.attempt or job.node != node:
        return None, []
    new = msgspec.structs.replace(job, pid=ev.pid, started_at=ev.started_at)
    return new, [NewEvent("job_started", job.id, node, {"attempt": ev.attempt, "pid": ev.pid})]


def _decode_result(raw: str | None) -> object:
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return {"invalid_json": raw[:10000]}


def exited(job: Job, ev: JobExited, node: str) -> Outcome:
    """The attempt's process ended. A job already settled (cancelled while running)
    keeps its state and only gains the exit details."""
    if job.attempt != ev.attempt or job.node != node:
        return None, []
    details = {
        "attempt": ev.attempt,
        "exit_code": ev.exit_code,
        "signal": ev.signal,
        "reason": ev.reason,
    }
    common = {
        "ended_at": job.ended_at or ev.ended_at,
        "exit_code": ev.exit_code,
        "signal": ev.signal,
        "progress": ev.progress if ev.progress is not None else job.progress,
        "stderr_tail": ev.stderr_tail or None,
        "result": _decode_result(ev.result) if ev.result is not None else job.result,
    }
    if job.state.finished:
        return msgspec.structs.replace(job, **common), [
            NewEvent("job_exit_after_settle", job.id, node, details)
        ]
    if job.state is not JobState.RUNNING:
        return None, []
    if ev.reason == "timeout":
        state, kind = JobState.TIMEOUT, "job_timeout"
        reason = f"killed after its timeout of {job.timeout:g}s" if job.timeout else "timeout"
    elif ev.exit_code == 0:
        state, kind, reason = JobState.COMPLETED, "job_completed", None
    else:
        state, kind = JobState.FAILED, "job_failed"
        reason = (
            f"killed by signal {ev.signal}" if ev.signal else f"exited with code {ev.exit_code}"
        )
    new = msgspec.structs.replace(job, state=state, reason=reason, **common)
    return new, [NewEvent(kind, job.id, node, details)]


def lost(job: Job, ev: JobLost, node: str) -> Outcome:
    if job.attempt != ev.attempt or job.node != node:
        return None, []
    if job.state.finished:
        return None, []  # e.g. a kill of an attempt that never started: nothing to settle
    if job.state is not JobState.RUNNING:
        return None, []
    new = msgspec.structs.replace(
        job, state=JobState.LOST, ended_at=ev.at, reason=f"lost: {ev.reason}"
    )
    return new, [NewEvent("job_lost", job.id, node, {"attempt": ev.attempt, "reason": ev.reason})]


def launch_failed(job: Job, ev: LaunchFailed, node: str) -> Outcome:
    if job.attempt != ev.attempt or job.node != node or job.state is not JobState.RUNNING:
        return None, []
    new = msgspec.structs.replace(
        job, state=JobState.FAILED, ended_at=ev.at, reason=f"launch failed: {ev.error}"
    )
    return new, [
        NewEvent("launch_failed", job.id, node, {"attempt": ev.attempt, "error": ev.error})
    ]


def runner_forgot(job: Job, node: str, now: float) -> Outcome:
    """The node's runner has no record of an attempt it had started (its state was
    wiped): the process cannot be found, so the job is lost."""
    new = msgspec.structs.replace(
        job, state=JobState.LOST, ended_at=now, reason="lost: the node's runner has no record of it"
    )
    return new, [
        NewEvent("job_lost", job.id, node, {"attempt": job.attempt, "reason": "unknown to runner"})
    ]


def unschedulable(job: Job, why: str, now: float) -> Outcome:
    if job.state is not JobState.PENDING:
        return None, []
    new = msgspec.structs.replace(
        job, state=JobState.FAILED, ended_at=now, reason=f"unschedulable: {why}"
    )
    return new, [NewEvent("job_unschedulable", job.id, None, {"reason": why})]


def cancel(job: Job, *, now: float, by: str) -> tuple[Job, list[NewEvent], Reap | None]:
    """Cancel settles the record at once; a running process is owed a kill (a reap),
    carried out now or when its node returns."""
    if job.state.finished:
        raise TransitionError(f"job {job.id} has already ended ({job.state})")
    reap = None
    if job.state is JobState.RUNNING and job.node is not None:
        reap = Reap(job_id=job.id, attempt=job.attempt, node=job.node, reason="cancel")
    new = msgspec.structs.replace(
        job, state=JobState.CANCELLED, ended_at=now, reason=f"cancelled by {by}"
    )
    return new, [NewEvent("job_cancelled", job.id, job.node, {"by": by})], reap


def hold(job: Job, on: int, on_state: JobState) -> Outcome:
    """A prerequisite of `--after` ended badly: wait for a person (nothing cascades)."""
    if job.state is not JobState.PENDING:
        return None, []
    new = msgspec.structs.replace(
        job, state=JobState.HELD, reason=f"held: prerequisite {on} ended {on_state}"
    )
    return new, [NewEvent("job_held", job.id, None, {"after": on, "state": str(on_state)})]


def release(job: Job, dead: list[int], *, by: str) -> Outcome:
    """Run a held job without its dead prerequisites."""
    if job.state is not JobState.HELD:
        raise TransitionError(f"job {job.id} is not held (it is {job.state})")
    new = msgspec.structs.replace(
        job,
        state=JobState.PENDING,
        after=[d for d in job.after if d not in dead],
        reason=None,
    )
    return new, [NewEvent("job_released", job.id, None, {"dropped": dead, "by": by})]
