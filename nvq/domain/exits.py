"""A job run twice because its node dropped off: both attempts may really end, and
their exits reach the daemon in whatever order the network allows. Which ending is
the job's outcome is decided here by one rule that does not depend on that order.
Pure: the caller passes the job as it stands and its events.

The attempts in contest are those since the job was first given back to the queue
because its node went down (`job_reassigned`), until a person or a retry starts it
afresh. Among their real endings, the one that stands is the first, by its own
node's end time, that ran to its end: ended by the job itself (or its `--timeout`)
and settling it, not a kill the queue sent nor a `--retries` restart. Every other
real ending is kept on its attempt with its real exit code: `attempt_superseded`
when it too ran to its end, after the one that stands; `job_exit_after_settle` when
the queue's kill ended it. An attempt still running when an earlier one is found to
stand is superseded and owed a kill. Each decision's event says which attempt stood
and why, and a report heard twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from nvq.domain import attempts, transitions
from nvq.model import Event, JobRecord, JobState, NewEvent, Outcome, Reap
from nvq_runner.protocol import JobExited

# The kinds of event that settle a job with an attempt's exit.
SETTLING = frozenset({"job_completed", "job_failed", "job_timeout"})
# Kinds that start the job afresh: the attempts before them are in no contest.
AFRESH = frozenset(
    {"job_requeued", "job_retried", "job_preempted", "job_moved", "job_card_failed"}
)
# States a contest may decide (a cancelled, held or lost job keeps its state).
DECIDED = frozenset({JobState.RUNNING, JobState.PENDING} | {
    JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT
})


class Ending(msgspec.Struct, frozen=True):
    """An attempt's real end, as its node reported it."""

    attempt: int
    node: str | None
    ended_at: float  # on its node's clock
    ran_to_end: bool  # the job ended it and it settles the job: it may stand
    exit_code: int | None = None
    signal: int | None = None


def stands(endings: Iterable[Ending]) -> Ending | None:
    """The ending that is the job's outcome: the first, by its node's own end time,
    that ran to its end (a tie goes to the lower attempt). None while none did."""
    ran = [e for e in endings if e.ran_to_end]
    return min(ran, key=lambda e: (e.ended_at, e.attempt), default=None)


def contest_start(events: Iterable[Event]) -> int | None:
    """The first attempt in contest: the one given back to the queue first since the
    job last started afresh. None: no attempt of this run was given back."""
    first: int | None = None
    for ev in events:
        if ev.kind == "job_reassigned" and first is None:
            first = int(ev.data.get("attempt", 0))
        elif ev.kind in AFRESH:
            first = None
    return first


def recorded(events: Iterable[Event], first: int) -> dict[int, Ending]:
    """The real endings the events hold of attempts `first` on, by attempt."""
    out: dict[int, Ending] = {}
    for ev in events:
        data = ev.data or {}
        number = data.get("attempt")
        if number is None or int(number) < first or "exit_code" not in data:
            continue
        if ev.kind in SETTLING:
            ran = data.get("reason") != "killed"
        elif ev.kind in ("attempt_superseded", "job_exit_after_settle"):
            ran = bool(data.get("ran_to_end", False))
        else:
            continue
        n = int(number)
        if n in out:
            continue  # the same ending told again (the job's outcome changing hands)
        ended_at = data.get("ended_at")
        out[n] = Ending(
            attempt=n,
            node=ev.node,
            ended_at=float(ended_at if ended_at is not None else ev.time),
            ran_to_end=ran,
            exit_code=data.get("exit_code"),
            signal=data.get("signal"),
        )
    return out


def _as_running(job: JobRecord, ev: JobExited, node: str) -> JobRecord:
    """The job as it was while the reporting attempt ran: what its exit applies to."""
    return msgspec.structs.replace(
        job, state=JobState.RUNNING, node=node, attempt=ev.attempt, ended_at=None,
        exit_code=None, signal=None, reason=None, result=None, progress=None,
    )


def ending_of(job: JobRecord, ev: JobExited, node: str) -> tuple[Ending, Outcome]:
    """The report as an `Ending`, and what it would do to the job were it to stand."""
    settled = transitions.exited(_as_running(job, ev, node), ev, node)
    ran = (
        ev.reason != "killed" and settled.job is not None and settled.job.state.finished
    )
    ending = Ending(ev.attempt, node, ev.ended_at, ran, ev.exit_code, ev.signal)
    return ending, settled


def _details(ev: JobExited, ran: bool) -> dict[str, object]:
    details: dict[str, object] = {
        "attempt": ev.attempt,
        "exit_code": ev.exit_code,
        "signal": ev.signal,
        "reason": ev.reason,
        "ended_at": ev.ended_at,
        "ran_to_end": ran,
    }
    if ev.peak_vram_mb:  # a superseded attempt's peak is still what it used
        details["peak_vram_mb"] = max(ev.peak_vram_mb.values())
        details["peak_vram_by_card"] = dict(ev.peak_vram_mb)
    return details


def _holder(job: JobRecord, known: dict[int, Ending], events: Sequence[Event]) -> Ending | None:
    """The ending the settled job shows now: the one that stands, or else (a kill
    that settled it) the last that settled it."""
    if not job.state.finished:
        return None
    held = stands(known.values())
    if held is not None:
        return held
    for ev in reversed(events):
        if ev.kind in SETTLING:
            return known.get(int(ev.data.get("attempt", 0)))
    return None


def _why(win: Ending) -> str:
    return f"attempt {win.attempt} on {win.node} ran to its end first: its outcome stands"


def _outcome_words(events: Sequence[Event]) -> dict[int, str | None]:
    return {a.attempt: a.outcome for a in attempts.derive(events)}


def on_exit(job: JobRecord, events: Sequence[Event], ev: JobExited, node: str) -> Outcome | None:
    """What the exit `ev` of `node` does to `job`, whose events are `events`, when its
    attempt is in a contest; None when it is not (the plain rule applies)."""
    first = contest_start(events)
    if first is None or ev.attempt < first or job.state not in DECIDED:
        return None
    known = recorded(events, first)
    if ev.attempt in known:
        return Outcome()  # heard before (a replay): nothing new
    if job.state is JobState.RUNNING and job.attempt == ev.attempt and job.node == node:
        return None  # the attempt the queue runs now ends: the plain rule
    mine, settled = ending_of(job, ev, node)
    before = _holder(job, known, events)
    after = stands([*known.values(), mine])
    words = _outcome_words(events)
    if after is not mine:
        # Kept on its attempt with its real exit code; the job does not change.
        if mine.ran_to_end and after is not None:
            data = {
                **_details(ev, True),
                "by_attempt": after.attempt,
                "overrides": words.get(ev.attempt),
                "reason": _why(after),
            }
            return Outcome(job, [NewEvent("attempt_superseded", job.id, node, data)])
        data = {**_details(ev, mine.ran_to_end), "overrides": words.get(ev.attempt)}
        return Outcome(job, [NewEvent("job_exit_after_settle", job.id, node, data)])
    assert settled.job is not None
    new = msgspec.structs.replace(settled.job, attempt=max(job.attempt, ev.attempt))
    word = words.get(ev.attempt)
    mark: dict[str, object] = {"ended_at": ev.ended_at, "ran_to_end": True}
    if word is not None:
        mark["overrides"] = word
    won = [msgspec.structs.replace(e, data={**e.data, **mark}) for e in settled.events]
    why = _why(mine)
    if before is not None:
        # Another attempt's ending stood until now: it ended later, by its clock.
        data = {
            "attempt": before.attempt,
            "exit_code": before.exit_code,
            "signal": before.signal,
            "ended_at": before.ended_at,
            "ran_to_end": before.ran_to_end,
            "by_attempt": ev.attempt,
            "overrides": words.get(before.attempt),
            "reason": why,
        }
        lost = NewEvent("attempt_superseded", job.id, before.node, data)
        return Outcome(new, [*won, lost])
    if job.state is JobState.RUNNING and job.node is not None:
        # The attempt that runs now repeats work already done: it stops.
        kill = Reap(job_id=job.id, attempt=job.attempt, node=job.node, reason="superseded")
        data = {"attempt": job.attempt, "by_attempt": ev.attempt, "reason": why}
        superseded = NewEvent("attempt_superseded", job.id, job.node, data)
        return Outcome(new, [*won, superseded], kill)
    return Outcome(new, won)


def in_question(job: JobRecord, owed: bool, ev: JobExited, node: str) -> bool:
    """Whether the exit may be one of several real ends of the job (so its events are
    needed): a kill was owed to its attempt, or the job has moved on from it."""
    return (
        owed
        or job.attempt != ev.attempt
        or job.node != node
        or job.state is not JobState.RUNNING
    )


def decide(
    job: JobRecord, events: Sequence[Event], ev: JobExited, node: str, *,
    owed: bool, settled: JobRecord | None = None, vram_cap_mb: int = 0,
) -> Outcome:
    """What the exit `ev` of `node` does to `job` (as it stands now; `events` are its
    events when `in_question`). `owed`: a kill was owed to the attempt; `settled`: the
    job as its attempt's kill left it, if it was settled then. The exit is always
    kept, whichever rule takes it. `vram_cap_mb`: as `transitions.exited`."""
    if in_question(job, owed, ev, node):
        outcome = on_exit(job, events, ev, node)
        if outcome is not None:
            return outcome
    outcome = transitions.exited(
        settled if settled is not None else job, ev, node, vram_cap_mb=vram_cap_mb
    )
    if outcome.job is None:
        return kept(job, ev, node)
    return outcome


def kept(job: JobRecord, ev: JobExited, node: str) -> Outcome:
    """An exit no rule took (its attempt long given up on): still kept on its attempt
    with its real exit code, the job unchanged."""
    data = _details(ev, False)
    return Outcome(job, [NewEvent("job_exit_after_settle", job.id, node, data)])
