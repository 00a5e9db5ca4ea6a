"""Two attempts of one job that both really ended (`nvq.domain.exits`): whatever order
the node going down, the reassignment, the two exit reports and their replays come
in, the job's outcome is the one rule's, and both real exits are kept on their
attempts. Driven through the same pure functions the daemon calls."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
from hypothesis import assume, given
from hypothesis import strategies as st

from nvq.domain import attempts, exits, reassign, transitions
from nvq.domain.request import record_of
from nvq.model import Event, Job, JobRecord, JobState, NewEvent, Outcome, Reap
from nvq_runner.protocol import JobExited

DOWN_AT = 100.0  # when node a is declared down (the daemon's clock)


@dataclass
class Queue:
    """What the daemon keeps of one job: the record, its events, the kills owed."""

    job: JobRecord
    events: list[Event] = field(default_factory=list)
    reaps: dict[int, Reap] = field(default_factory=dict)  # attempt → owed kill
    clock: float = 1.0

    def commit(self, outcome: Outcome) -> None:
        self.clock += 1
        if outcome.job is not None:
            self.job = outcome.job
        for e in outcome.events:
            self.events.append(Event(id=len(self.events) + 1, time=self.clock, kind=e.kind,
                                     job_id=e.job_id, node=e.node, data=dict(e.data)))
        if outcome.reap is not None:
            self.reaps[outcome.reap.attempt] = outcome.reap

    def down(self) -> None:
        self.commit(reassign.reassign(self.job, "a", "a is unreachable", DOWN_AT))

    def dispatch(self) -> bool:
        outcome = transitions.dispatch(self.job, node="b", gpus=[0], now=self.clock)
        self.commit(outcome)
        return outcome.job is not None

    def deliver(self, ev: JobExited, node: str) -> None:
        owed = ev.attempt in self.reaps
        events = self.events if exits.in_question(self.job, owed, ev, node) else []
        self.commit(exits.decide(self.job, events, ev, node, owed=owed))
        self.reaps.pop(ev.attempt, None)


def _job() -> JobRecord:
    return record_of(Job(id=1, name="j", state=JobState.RUNNING, command="true", user="me",
               submitter="me", created_at=1.0, node="a", attempt=1, gpus=[0],
               dispatched_at=1.0, started_at=2.0))


def _report(attempt: int, code: int, reason: str, at: float) -> JobExited:
    signal = 15 if reason == "killed" else None
    return JobExited(seq=attempt, job_id=1, attempt=attempt, exit_code=code, signal=signal,
                     ended_at=at, reason=reason)  # type: ignore[arg-type]


def _settles_as(ev: JobExited) -> tuple[JobState, int | None]:
    if ev.reason == "timeout":
        return JobState.TIMEOUT, ev.exit_code
    return (JobState.COMPLETED if ev.exit_code == 0 else JobState.FAILED), ev.exit_code


reports = st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from(["exit", "timeout", "killed"]))


def interleavings() -> list[list[str]]:
    """Every order of: node a declared down, the job dispatched to b, attempt 1's
    exit report (x1), attempt 2's (x2), and a replay of each (r1, r2: the report sent
    again, after the first), where down comes before the dispatch and the dispatch
    before attempt 2 can end. A step that cannot happen then (a dispatch of a job
    already settled) does nothing."""
    out: list[list[str]] = []
    for x1_at in range(4):
        base = ["down", "dispatch", "x2"]
        base.insert(x1_at, "x1")
        for r1_at in range(base.index("x1") + 1, len(base) + 1):
            with_r1 = [*base[:r1_at], "r1", *base[r1_at:]]
            for r2_at in range(with_r1.index("x2") + 1, len(with_r1) + 1):
                out.append([*with_r1[:r2_at], "r2", *with_r1[r2_at:]])
    return out


ORDERS = interleavings()


def _play(steps: list[str], x1: JobExited, x2: JobExited) -> tuple[Queue, bool]:
    q = Queue(_job())
    q.commit(Outcome(q.job, [NewEvent("job_dispatched", 1, "a", {"attempt": 1, "gpus": [0]})]))
    dispatched = False
    for step in steps:
        if step == "down":
            q.down()
        elif step == "dispatch":
            dispatched = q.dispatch()
        elif step in ("x1", "r1") or (step in ("x2", "r2") and dispatched):
            ev, node = (x1, "a") if step[1] == "1" else (x2, "b")
            before = (q.job.state, q.job.exit_code, attempts.derive(q.events))
            q.deliver(ev, node)
            if step[0] == "r":  # a replay changes nothing
                assert (q.job.state, q.job.exit_code, attempts.derive(q.events)) == before
    return q, dispatched


@given(first=reports, second=reports, t1=st.floats(10, 300), t2=st.floats(DOWN_AT + 1, 300))
def test_the_outcome_is_the_rules_in_every_interleaving(
    first: tuple[int, str], second: tuple[int, str], t1: float, t2: float
) -> None:
    x1, x2 = _report(1, *first, t1), _report(2, *second, t2)
    # A kill only comes from the queue: to the attempt it gave up on (never before
    # its node was declared down), or to one superseded by an attempt that ran to
    # its end.
    assume(x2.reason != "killed" or x1.reason != "killed")
    for steps in ORDERS:
        early = steps.index("x1") < steps.index("down")
        if early and x1.reason == "killed":
            continue
        q, dispatched = _play(steps, x1, x2)
        ran = [x1] if early or not dispatched else [x1, x2]
        if early:
            assert (q.job.state, q.job.exit_code) == _settles_as(x1), steps
            continue
        # The rule, said again here: the first by its node's end time that ran to its end.
        winner = min((e for e in ran if e.reason != "killed"),
                     key=lambda e: (e.ended_at, e.attempt))
        assert (q.job.state, q.job.exit_code) == _settles_as(winner), steps
        history = {a.attempt: a for a in attempts.derive(q.events)}
        for e in ran:  # every real exit is kept, on its own attempt
            assert history[e.attempt].exit_code == e.exit_code, steps
        assert history[winner.attempt].outcome == _settles_as(winner)[0].value, steps
        if len(ran) == 2:
            loser = x2 if winner is x1 else x1
            word = history[loser.attempt].outcome
            if loser.reason == "killed":
                assert word in ("superseded", "reassigned"), steps
            else:  # said, with the attempt that stood
                assert word == "superseded", steps
                said = [e for e in q.events if e.kind == "attempt_superseded"
                        and e.data.get("attempt") == loser.attempt]
                assert said and said[-1].data["by_attempt"] == winner.attempt, steps
        assert q.job.attempt == (2 if dispatched else 1), steps
        assert not q.reaps or q.job.state is JobState.PENDING, steps  # no kill left owed


def test_the_later_exit_arriving_first_is_superseded_when_the_earlier_arrives() -> None:
    """Job 2576 of the soak: attempt 1 exited 0 on its dropped node, attempt 2 exited
    2 elsewhere and was heard first. The job completed; attempt 2 is superseded."""
    q = Queue(_job())
    q.commit(Outcome(q.job, [NewEvent("job_dispatched", 1, "a", {"attempt": 1, "gpus": [0]})]))
    q.down()
    assert q.dispatch()
    q.deliver(_report(2, 2, "exit", 150.0), "b")
    assert (q.job.state, q.job.exit_code) == (JobState.FAILED, 2)
    q.deliver(_report(1, 0, "exit", 90.0), "a")
    assert (q.job.state, q.job.exit_code, q.job.node) == (JobState.COMPLETED, 0, "a")
    got = [(a.attempt, a.node, a.outcome, a.exit_code) for a in attempts.derive(q.events)]
    assert got == [(1, "a", "completed", 0), (2, "b", "superseded", 2)]
    why = next(e for e in q.events if e.kind == "attempt_superseded")
    assert why.data["reason"] == "attempt 1 on a ran to its end first: its outcome stands"
    assert q.reaps == {}


def test_a_kill_the_queue_owed_never_stands() -> None:
    q = Queue(_job())
    q.commit(Outcome(q.job, [NewEvent("job_dispatched", 1, "a", {"attempt": 1, "gpus": [0]})]))
    q.down()
    q.deliver(_report(1, 143, "killed", 120.0), "a")  # the owed kill, when a returned
    assert q.job.state is JobState.PENDING  # still to run elsewhere
    assert q.dispatch()
    q.deliver(_report(2, 0, "exit", 200.0), "b")
    assert (q.job.state, q.job.exit_code) == (JobState.COMPLETED, 0)
    assert [a.exit_code for a in attempts.derive(q.events)] == [143, 0]


def test_a_requeued_job_starts_a_new_contest() -> None:
    q = Queue(_job())
    q.commit(Outcome(q.job, [NewEvent("job_dispatched", 1, "a", {"attempt": 1, "gpus": [0]})]))
    q.down()
    assert q.dispatch()
    q.deliver(_report(2, 0, "exit", 150.0), "b")
    requeued = msgspec.structs.replace(q.job, state=JobState.PENDING, node=None)
    q.commit(Outcome(requeued, [NewEvent("job_requeued", 1, None, {"attempt": 2})]))
    assert q.dispatch()
    assert exits.contest_start(q.events) is None
    q.deliver(_report(3, 1, "exit", 400.0), "b")
    assert (q.job.state, q.job.exit_code) == (JobState.FAILED, 1)
