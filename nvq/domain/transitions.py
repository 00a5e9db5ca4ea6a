"""Job state transitions as pure functions: (job, what happened) → `Outcome` (the new
job, its events, a kill it owes a node). No I/O and no clock: the caller passes `now`.
The daemon commits what these return, then acts on it. An outcome without a job means
the event does not apply (a stale attempt, a replay of something already settled), so
the caller only acknowledges it. A request that is not allowed raises
`TransitionError` with a message for the user."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from nvq.domain import card_health, deps, gpu_oom, request, retry_policy
from nvq.domain.failure_reasons import failure_reason, oom_reason
from nvq.errors import UserError
from nvq.model import JobRecord, JobSpec, JobState, NewEvent, Outcome, Reap, WrittenFile
from nvq_runner.protocol import JobExited, JobLost, JobStarted, LaunchFailed


class TransitionError(UserError):
    """The requested change is not allowed in the job's state (message for the user)."""


def new_job(spec: JobSpec, *, user: str, now: float) -> JobRecord:
    """The record of a job submitted as `spec`, its request as the queue keeps it
    (`JobRecord`'s rule): name and submitter filled in, `after` sorted, `array` and
    `lane` left to the daemon (it expands the one and resolves the other)."""
    accepted = msgspec.structs.replace(
        spec,
        name=spec.name or _default_name(spec.command),
        submitter=spec.submitter or user,
        after=sorted(set(spec.after)),
        after_any=sorted(set(spec.after_any)),
        lane=None,
        array=None,
    )
    # rank: numbered by the store at insert (its id), the order of submission, which a
    # clock stepped back cannot change as `now` could.
    return JobRecord(id=0, state=JobState.PENDING, user=user, created_at=now, spec=accepted, rank=0.0)


def _default_name(command: str) -> str:
    words = command.split()
    # Printable only: a name reaches terminals, tables and mail headers.
    name = "".join(ch for ch in (words[0].rsplit("/", 1)[-1] if words else "") if ch.isprintable())
    return name[:40] or "job"


def dispatch(job: JobRecord, *, node: str, gpus: list[int], now: float, note: str = "") -> Outcome:
    """`note`: placement had to take a card busy with foreign work (card_choice.py)."""
    if job.state is not JobState.PENDING:
        return Outcome()
    new = msgspec.structs.replace(
        job,
        state=JobState.RUNNING,
        attempt=job.attempt + 1,
        node=node,
        gpus=list(gpus),
        pid=None,
        port=None,
        dispatched_at=now,
        started_at=None,
        ended_at=None,
        exit_code=None,
        signal=None,
        reason=note or None,  # `job show`, `job why` say it while the job runs
        stderr_tail=None, stderr_tail_stream=None,
    )
    data: dict[str, object] = {"attempt": new.attempt, "gpus": new.gpus}
    if job.spec.vram_mb:  # what this attempt reserved (a retry may reserve more)
        data["vram_mb"] = job.spec.vram_mb
    if note:
        data["note"] = note
    return Outcome(new, [NewEvent("job_dispatched", job.id, node, data)])


def started(job: JobRecord, ev: JobStarted, node: str) -> Outcome:
    if job.state is not JobState.RUNNING or job.attempt != ev.attempt or job.node != node:
        return Outcome()
    new = msgspec.structs.replace(
        job, pid=ev.pid, started_at=ev.started_at, env_dropped=list(ev.env_dropped),
        port=ev.port, phase="",
    )
    data = {"attempt": ev.attempt, "pid": ev.pid}
    return Outcome(new, [NewEvent("job_started", job.id, node, data)])


def _decode_result(raw: str | None) -> object:
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return {"invalid_json": raw[:10000]}


def exited(job: JobRecord, ev: JobExited, node: str, *, vram_cap_mb: int = 0) -> Outcome:
    """The attempt's process ended. A job already settled (cancelled while running)
    keeps its state and only gains the exit details; a `lost` one takes an exit of its
    own making. `vram_cap_mb`: the most a retry after a GPU out-of-memory may reserve
    (what the largest fitting cards hold; 0: unknown)."""
    if job.attempt != ev.attempt or job.node != node:
        return Outcome()
    details: dict[str, object] = {
        "attempt": ev.attempt,
        "exit_code": ev.exit_code,
        "signal": ev.signal,
        "reason": ev.reason,
        "ended_at": ev.ended_at,  # its node's clock: which of two attempts ended first
    }
    peak = max(ev.peak_vram_mb.values(), default=0)
    if ev.peak_vram_mb:  # the attempt's record (nvq.domain.attempts)
        details["peak_vram_mb"] = peak
        details["peak_vram_by_card"] = dict(ev.peak_vram_mb)
    # Lost was the daemon's guess: an exit of the job's own making is the fact (not
    # the kill the queue owed an attempt it gave up on), and the event log says so.
    if job.state is JobState.LOST and ev.reason != "killed":
        details["overrides"] = "lost"
        job = msgspec.structs.replace(job, state=JobState.RUNNING, ended_at=None)
    common = {
        "ended_at": job.ended_at or ev.ended_at,
        "exit_code": ev.exit_code,
        "signal": ev.signal,
        "progress": ev.progress if ev.progress is not None else job.progress,
        "stderr_tail": ev.stderr_tail or None,
        "stderr_tail_stream": (ev.stderr_tail_stream or None) if ev.stderr_tail else None,
        "result": _decode_result(ev.result) if ev.result is not None else job.result,
        "result_error": ev.result_error,
        "log_truncated": ev.log_truncated,
        "written": [WrittenFile(*item) for item in ev.written],
    }
    if job.state.finished:
        settled = msgspec.structs.replace(job, **common)
        return Outcome(settled, [NewEvent("job_exit_after_settle", job.id, node, details)])
    if job.state is not JobState.RUNNING:
        return Outcome()
    if card_health.fails_the_card(ev):
        return card_health.card_failed(job, ev, node, details)
    if ev.oom_killed and ev.reason == "exit":
        why = oom_reason(job, ev)
        details["oom"] = True
        if retry_policy.retries(job, "oom"):
            return retry(job, node, why, attempt_ended=details)
        new = msgspec.structs.replace(job, state=JobState.FAILED, reason=why, **common)
        return Outcome(new, [NewEvent("job_failed", job.id, node, details)])
    failed = ev.reason == "exit" and ev.exit_code != 0
    if gpu_oom.ran_out(job, failed=failed, tail=ev.stderr_tail or "", peak_mb=peak):
        why = gpu_oom.reason(job, peak, ev.exit_code)
        details["gpu_oom"] = True
        if retry_policy.retries(job, "oom"):
            more = gpu_oom.larger_vram(job.spec.vram_mb, peak, vram_cap_mb) \
                if job.spec.vram_mb else None
            return retry(job, node, why, attempt_ended=details, vram_mb=more)
        new = msgspec.structs.replace(job, state=JobState.FAILED, reason=why, **common)
        return Outcome(new, [NewEvent("job_failed", job.id, node, details)])
    if ev.reason == "timeout":
        state, kind = JobState.TIMEOUT, "job_timeout"
        reason = f"killed after its timeout of {job.spec.timeout:g}s" if job.spec.timeout else "timeout"
    elif ev.exit_code == 0:
        state, kind, reason = JobState.COMPLETED, "job_completed", None
    else:
        state, kind = JobState.FAILED, "job_failed"
        reason = failure_reason(job, ev, node)
    new = msgspec.structs.replace(job, state=state, reason=reason, **common)
    return Outcome(new, [NewEvent(kind, job.id, node, details)])


def lost(job: JobRecord, ev: JobLost, node: str) -> Outcome:
    if job.attempt != ev.attempt or job.node != node:
        return Outcome()
    if job.state.finished:
        return Outcome()  # e.g. a kill of an attempt that never started: nothing to settle
    if job.state is not JobState.RUNNING:
        return Outcome()
    if retry_policy.retries(job, "lost"):
        return retry(job, node, ev.reason)
    new = msgspec.structs.replace(
        job, state=JobState.LOST, ended_at=ev.at, reason=f"lost: {ev.reason}"
    )
    data = {"attempt": ev.attempt, "reason": ev.reason}
    return Outcome(new, [NewEvent("job_lost", job.id, node, data)])


def retry(
    job: JobRecord, node: str, why: str, *, attempt_ended: dict[str, object] | None = None,
    vram_mb: int | None = None,
) -> Outcome:
    """The process vanished (or, with `attempt_ended`, the exit those details
    describe is one `--retries-on` names) and `--retries` allows another go: back in
    line, keeping its place (rank) and note; the stale progress line goes. `vram_mb`:
    the reservation it runs with from now on (after a GPU out-of-memory)."""
    was = job.spec.vram_mb
    if vram_mb is not None and vram_mb != was:
        job = request.asking(job, vram_mb=vram_mb)
        why = f"{why}; next with {gpu_oom.resized_words(vram_mb, was)}"
    new = msgspec.structs.replace(
        job,
        state=JobState.PENDING,
        retried=job.retried + 1,
        node=None,
        gpus=[],
        pid=None,
        progress=None,
        reason=(
            f"retrying after its process vanished: {why}"
            if attempt_ended is None
            else f"retrying: {why}"
        ),
    )
    data: dict[str, object] = {
        "attempt": job.attempt, "retry": new.retried, "of": job.spec.retries, "reason": why,
    }
    if job.spec.vram_mb != was:
        data |= {"vram_mb": job.spec.vram_mb, "vram_was_mb": was}
    if attempt_ended is not None:
        data |= {k: v for k, v in attempt_ended.items() if k not in data}
    return Outcome(new, [NewEvent("job_retried", job.id, node, data)])


def launch_failed(job: JobRecord, ev: LaunchFailed, node: str) -> Outcome:
    if job.attempt != ev.attempt or job.node != node or job.state is not JobState.RUNNING:
        return Outcome()
    if ev.phase == "setup":  # the error names the setup and ends with its log's tail
        new = msgspec.structs.replace(
            job, state=JobState.FAILED, ended_at=ev.at, reason=ev.error, phase="")
        data = {"attempt": ev.attempt, "error": ev.error}
        return Outcome(new, [NewEvent("setup_failed", job.id, node, data)])
    new = msgspec.structs.replace(
        job, state=JobState.FAILED, ended_at=ev.at, reason=f"launch failed: {ev.error}"
    )
    data = {"attempt": ev.attempt, "error": ev.error}
    return Outcome(new, [NewEvent("launch_failed", job.id, node, data)])


def runner_forgot(job: JobRecord, node: str, now: float) -> Outcome:
    """The node's runner has no record of an attempt it had started (its state was
    wiped): the process cannot be found, so the job is lost (or retried)."""
    if retry_policy.retries(job, "lost"):
        return retry(job, node, "unknown to runner")
    new = msgspec.structs.replace(
        job, state=JobState.LOST, ended_at=now, reason="lost: the node's runner has no record of it"
    )
    data = {"attempt": job.attempt, "reason": "unknown to runner"}
    return Outcome(new, [NewEvent("job_lost", job.id, node, data)])


def unschedulable(job: JobRecord, why: str, now: float) -> Outcome:
    if job.state is not JobState.PENDING:
        return Outcome()
    new = msgspec.structs.replace(
        job, state=JobState.FAILED, ended_at=now, reason=f"unschedulable: {why}"
    )
    return Outcome(new, [NewEvent("job_unschedulable", job.id, None, {"reason": why})])


def cancel(job: JobRecord, *, now: float, by: str) -> Outcome:
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
    return Outcome(new, [NewEvent("job_cancelled", job.id, job.node, {"by": by})], reap)


def hold(job: JobRecord, on: int, on_state: JobState, *, now: float) -> Outcome:
    """A prerequisite of `--after` ended badly: wait for a person (nothing cascades),
    or, for a job that asked so (`--kill-on-invalid-dep`), end it cancelled; its own
    dependents then meet the same rule."""
    if job.state is not JobState.PENDING:
        return Outcome()
    data = {"after": on, "state": str(on_state)}
    if job.spec.kill_on_invalid_dep:
        reason = f"cancelled: prerequisite {on} ended {on_state} (--kill-on-invalid-dep)"
        new = msgspec.structs.replace(job, state=JobState.CANCELLED, ended_at=now, reason=reason)
        return Outcome(new, [NewEvent("job_cancelled", job.id, None, {"by": "queue", **data})])
    new = msgspec.structs.replace(
        job, state=JobState.HELD, reason=f"held: prerequisite {on} ended {on_state}"
    )
    return Outcome(new, [NewEvent("job_held", job.id, None, data)])


def release(job: JobRecord, dead: list[int], *, by: str) -> Outcome:
    """Run a held job without its dead prerequisites."""
    if job.state is not JobState.HELD:
        raise TransitionError(f"job {job.id} is not held (it is {job.state})")
    after = [d for d in job.spec.after if d not in dead]
    new = msgspec.structs.replace(
        request.asking(job, after=after), state=JobState.PENDING, reason=None
    )
    return Outcome(new, [NewEvent("job_released", job.id, None, {"dropped": dead, "by": by})])


# -- policy: requeue, pause, resume, edit, priority ---------------------------------------

def requeue(job: JobRecord, *, by: str, now: float) -> Outcome:
    """Run a finished job again: same id and note, to the back of its priority."""
    if not job.state.finished:
        raise TransitionError(
            f"job {job.id} has not ended (it is {job.state}); only a finished job can be requeued"
        )
    new = msgspec.structs.replace(
        job,
        state=JobState.PENDING,
        rank=now,
        retried=0,
        ended_at=None,
        exit_code=None,
        signal=None,
        reason=None,
        progress=None,
        stderr_tail=None, stderr_tail_stream=None,
        pid=None,
        node=None,
        gpus=[],
    )
    return Outcome(new, [NewEvent("job_requeued", job.id, None, {"by": by, "was": str(job.state)})])


PAUSABLE = frozenset({JobState.PENDING, JobState.HELD, JobState.RUNNING})


def pause(job: JobRecord, *, by: str, now: float) -> Outcome:
    """Keep a job in the queue but unassigned. A running one is stopped (a reap: TERM,
    grace, KILL) and comes back to `paused`; its job directory and artifacts stay."""
    if job.state not in PAUSABLE:
        raise TransitionError(f"job {job.id} cannot be paused: it is {job.state}")
    reap = None
    if job.state is JobState.RUNNING and job.node is not None:
        reap = Reap(job_id=job.id, attempt=job.attempt, node=job.node, reason="pause")
    new = msgspec.structs.replace(job, state=JobState.PAUSED, pid=None, reason=f"paused by {by}")
    data = {"by": by, "was": str(job.state)}
    return Outcome(new, [NewEvent("job_paused", job.id, job.node if reap else None, data)], reap)


def resume(job: JobRecord, *, by: str) -> Outcome:
    """Back in line where it was (its rank is unchanged); held-ness is re-judged by
    the next placement pass."""
    if job.state is not JobState.PAUSED:
        raise TransitionError(f"job {job.id} is not paused (it is {job.state})")
    new = msgspec.structs.replace(job, state=JobState.PENDING, reason=None)
    return Outcome(new, [NewEvent("job_resumed", job.id, None, {"by": by})])


EDITABLE = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def edit_after(
    job: JobRecord,
    *,
    drop: list[int],
    add: list[int],
    by: str,
    waits_for: Callable[[int], Iterable[int]] = lambda _id: (),
) -> Outcome:
    """Re-attach a waiting job's `--after` prerequisites, in place: id, note, rank and
    submitter are untouched. A held job goes back to pending; the next pass holds it
    again if a prerequisite it still has ended badly. `waits_for(j)`: what job j not
    yet ended waits for, so that no edge closing a cycle (jobs waiting on each other
    for ever) is stored."""
    if job.state not in EDITABLE:
        raise TransitionError(f"job {job.id} cannot be edited: it is {job.state}")
    missing = [d for d in drop if d not in job.spec.after and d not in job.spec.after_any]
    if missing:
        raise TransitionError(f"job {job.id} does not wait for {', '.join(map(str, missing))}")
    if job.id in add:
        raise TransitionError(f"job {job.id} cannot wait for itself")
    cycle = deps.cycle_closed_by(job.id, [a for a in add if a not in drop], waits_for)
    if cycle is not None:
        raise TransitionError(deps.cycle_message(cycle))
    after = sorted((set(job.spec.after) - set(drop)) | set(add))
    after_any = sorted(set(job.spec.after_any) - set(drop) - set(add))
    state = JobState.PENDING if job.state is JobState.HELD else job.state
    new = msgspec.structs.replace(
        request.asking(job, after=after, after_any=after_any),
        state=state,
        reason=None if state is JobState.PENDING else job.reason,
    )
    data = {"dropped": drop, "added": add, "by": by}
    return Outcome(new, [NewEvent("job_edited", job.id, None, data)])


def reorder(job: JobRecord, *, priority: int, rank: float, by: str) -> Outcome:
    """A new place in the dispatch order (priority, then rank)."""
    if job.state.finished:
        raise TransitionError(f"job {job.id} has already ended ({job.state})")
    new = msgspec.structs.replace(request.asking(job, priority=priority), rank=rank)
    data = {"priority": priority, "was": job.spec.priority, "by": by}
    return Outcome(new, [NewEvent("job_priority", job.id, None, data)])
