"""A job's --setup as its own phase: the pure decisions on the runner's reports."""

from __future__ import annotations

from nvq.cli.render.jobs import state_label
from nvq.daemon.core.setup_phase import applied
from nvq.domain import transitions
from nvq.domain.request import record_of, view_of
from nvq.model import Job, JobRecord, JobState
from nvq_runner import protocol as p


def running(**kw: object) -> JobRecord:
    return record_of(Job(id=4, name="train", state=JobState.RUNNING, command="python train.py",
               user="u", submitter="u", created_at=0.0, node="ws1", attempt=2, gpus=[0],
               **kw))  # type: ignore[arg-type]


def test_setup_started_then_done_sets_and_clears_the_phase() -> None:
    job, event = applied(running(), p.SetupPhase(seq=1, job_id=4, attempt=2, at=1.0), "ws1")
    assert job is not None and job.phase == "setup" and state_label(view_of(job)) == "setup"
    assert event is not None and event.kind == "setup_started"
    done, event = applied(job, p.SetupPhase(seq=2, job_id=4, attempt=2, at=2.0, done=True,
                                            cached=True), "ws1")
    assert done is not None and done.phase == "" and state_label(view_of(done)) == "running"
    assert event is not None and event.kind == "setup_done" and event.data["cached"] is True


def test_a_stale_report_changes_nothing() -> None:
    old = p.SetupPhase(seq=1, job_id=4, attempt=1, at=1.0)
    assert applied(running(), old, "ws1") == (None, None)
    assert applied(running(), p.SetupPhase(seq=1, job_id=4, attempt=2, at=1.0), "ws2") \
        == (None, None)


def test_a_failed_setup_fails_the_job_as_a_setup_failure_without_a_retry() -> None:
    job = running(phase="setup", retries=3)
    error = "setup `uv sync` failed (exit 1):\nerror: no such package"
    out = transitions.launch_failed(job, p.LaunchFailed(seq=3, job_id=4, attempt=2, error=error,
                                                        at=3.0, phase="setup"), "ws1")
    assert out.job is not None and out.job.state is JobState.FAILED
    assert out.job.reason == error and out.job.phase == "" and out.job.attempt == 2
    assert [e.kind for e in out.events] == ["setup_failed"]


def test_starting_clears_the_phase() -> None:
    out = transitions.started(running(phase="setup"),
                              p.JobStarted(seq=4, job_id=4, attempt=2, pid=99, started_at=4.0),
                              "ws1")
    assert out.job is not None and out.job.phase == ""
