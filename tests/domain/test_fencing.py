"""Leases, the daemon's side (`nvq.domain.fencing`): what a runner's `AttemptFenced`
does to its job, and a `--no-reassign` job found still running after a partition."""

from __future__ import annotations

import msgspec

from nvq.domain import attempts, exits, fencing, reassign
from nvq.domain.request import record_of
from nvq.model import Event, Job, JobRecord, JobState, Reap
from nvq_runner.protocol import AttemptFenced, JobExited

EV = AttemptFenced(seq=9, job_id=7, attempt=1, at=50.0, silent_for=3.2, lease=3.0)


def _job(**kw: object) -> JobRecord:
    base = Job(id=7, name="j", state=JobState.RUNNING, command="true", user="me",
               submitter="me", created_at=1.0, node="n1", attempt=1, gpus=[0])
    return record_of(msgspec.structs.replace(base, **kw))


def test_a_fenced_attempt_of_a_running_job_puts_it_back_in_line() -> None:
    out = fencing.fenced(_job(), EV, "n1", None)
    assert out.job is not None and out.job.state is JobState.PENDING
    assert out.job.node is None and out.job.gpus == [] and out.job.attempt == 1
    assert out.job.reason is not None and out.job.reason.startswith("fenced: node n1 heard")
    # placed again only once the old attempt's exit is in
    assert out.reap == Reap(7, 1, "n1", "fenced")
    assert "fenced" in reassign.STOPPING_REASONS and "fenced" in reassign.FENCING_REASONS
    (ev,) = out.events
    assert ev.kind == "attempt_fenced" and ev.data["requeued"] is True
    assert ev.data["silent_for"] == 3.2 and ev.data["lease"] == 3.0


def test_a_fenced_attempt_already_reassigned_only_changes_its_reap() -> None:
    owed = Reap(7, 1, "n1", "reassigned")
    pending = _job(state=JobState.PENDING, node=None, gpus=[])
    out = fencing.fenced(pending, EV, "n1", owed)
    assert out.job is None and out.reap == Reap(7, 1, "n1", "fenced")
    assert [e.data["requeued"] for e in out.events] == [False]
    # and the kill's exit that follows is never taken for the job's outcome
    killed = JobExited(seq=2, job_id=7, attempt=1, exit_code=143, signal=15, ended_at=9.0,
                       reason="killed")
    ending, _ = exits.ending_of(pending, killed, "n1")
    assert not ending.ran_to_end
    moved_on = _job(attempt=2, node="n0")
    out = fencing.fenced(moved_on, EV, "n1", None)
    assert out.job is None and out.reap is None and len(out.events) == 1


def test_a_no_reassign_job_found_running_after_the_partition_runs_on() -> None:
    lost = _job(state=JobState.LOST, no_reassign=True, ended_at=9.0, reason="lost: …")
    reap = Reap(7, 1, "n1", "lost")
    out = fencing.resumed(lost, 1, "n1", reap)
    assert out.job is not None and out.job.state is JobState.RUNNING
    assert out.job.ended_at is None and out.job.reason is None
    assert [e.kind for e in out.events] == ["job_found"]
    # anything else found running is still killed
    assert fencing.resumed(lost, 1, "n1", Reap(7, 1, "n1", "cancelled")).job is None
    assert fencing.resumed(_job(state=JobState.LOST), 1, "n1", reap).job is None
    assert fencing.resumed(lost, 2, "n1", reap).job is None


def test_the_attempt_list_says_fenced_unless_it_was_reassigned_first() -> None:
    def ev(i: int, kind: str, **data: object) -> Event:
        return Event(id=i, time=float(i), kind=kind, job_id=7, node="n1", data=data)

    run = [ev(1, "job_dispatched", attempt=1), ev(2, "job_started", attempt=1)]
    fenced = ev(3, "attempt_fenced", attempt=1, requeued=True)
    assert [a.outcome for a in attempts.derive([*run, fenced])] == ["fenced"]
    moved = ev(3, "job_reassigned", attempt=1)
    late = ev(4, "attempt_fenced", attempt=1, requeued=False)
    assert [a.outcome for a in attempts.derive([*run, moved, late])] == ["reassigned"]


def test_a_reassigned_attempt_ends_when_its_runner_stopped_it() -> None:
    def ev(t: float, kind: str, **data: object) -> Event:
        return Event(id=int(t), time=t, kind=kind, job_id=7, node="n1", data=data)

    run = [ev(100, "job_dispatched", attempt=1), ev(101, "job_started", attempt=1)]
    moved = ev(400, "job_reassigned", attempt=1)  # after node_grace
    late = ev(900, "attempt_fenced", attempt=1, requeued=False, fenced_at=250.0)
    (first,) = attempts.derive([*run, moved, late])
    assert (first.outcome, first.started_at, first.ended_at) == ("reassigned", 101, 250.0)
    # not heard from the node again: the reassignment is all the queue knows
    (unknown,) = attempts.derive([*run, moved])
    assert unknown.ended_at == 400
