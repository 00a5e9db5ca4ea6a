"""`--retries-on oom,lost`: which endings spend a `--retries` restart, and how an OOM
kill is told from a plain SIGKILL (only on the runner's evidence)."""

from __future__ import annotations

import msgspec
import pytest

from nvq.domain import retry_policy, transitions
from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState
from nvq_runner.protocol import JobExited, JobLost


def running(**kw: object) -> JobRecord:
    base = Job(
        id=7, name="j", state=JobState.RUNNING, command="c", user="ann", submitter="ann",
        created_at=1.0, attempt=1, node="n0", gpus=[0], memory_mb=8192, retries=1,
    )  # fmt: skip
    return record_of(msgspec.structs.replace(base, **kw))


def killed(*, oom: bool) -> JobExited:
    return JobExited(
        seq=1, job_id=7, attempt=1, exit_code=137, signal=9, ended_at=5.0, reason="exit",
        oom_killed=oom,
    )  # fmt: skip


def test_an_oom_kill_is_named_and_not_retried_by_default() -> None:
    out = transitions.exited(running(), killed(oom=True), "n0")
    assert out.job is not None and out.job.state is JobState.FAILED
    assert out.job.reason == "killed by the OOM killer (exit 137, host memory limit 8GiB)"
    assert [e.kind for e in out.events] == ["job_failed"] and out.events[0].data["oom"]


def test_retries_on_oom_runs_it_again_and_counts_the_restart() -> None:
    out = transitions.exited(running(retries_on="lost,oom"), killed(oom=True), "n0")
    assert out.job is not None and out.job.state is JobState.PENDING
    assert out.job.retried == 1 and out.job.node is None
    assert out.job.reason == "retrying: killed by the OOM killer (exit 137, host memory limit 8GiB)"
    (ev,) = out.events
    assert ev.kind == "job_retried" and ev.data["oom"] and ev.data["exit_code"] == 137
    spent = transitions.exited(running(retries_on="oom", retried=1), killed(oom=True), "n0")
    assert spent.job is not None and spent.job.state is JobState.FAILED


def test_a_plain_sigkill_is_never_taken_for_an_oom_kill() -> None:
    out = transitions.exited(running(retries_on="oom"), killed(oom=False), "n0")
    assert out.job is not None and out.job.state is JobState.FAILED
    assert out.job.reason == "killed by signal 9"


def test_lost_is_retried_only_when_asked() -> None:
    gone = JobLost(seq=1, job_id=7, attempt=1, reason="vanished", at=5.0)
    assert transitions.lost(running(), gone, "n0").job.state is JobState.PENDING  # type: ignore[union-attr]
    only_oom = transitions.lost(running(retries_on="oom"), gone, "n0")
    assert only_oom.job is not None and only_oom.job.state is JobState.LOST
    forgot = transitions.runner_forgot(running(retries_on="oom"), "n0", 5.0)
    assert forgot.job is not None and forgot.job.state is JobState.LOST


@pytest.mark.parametrize(
    ("text", "want"), [("lost", "lost"), ("oom, lost", "lost,oom"), ("oom,oom", "oom")]
)
def test_parse_retries_on(text: str, want: str) -> None:
    assert retry_policy.parse_retries_on(text) == want


@pytest.mark.parametrize(
    ("text", "error"),
    [("", "give one or more of lost, oom"), ("oom,failed", "unknown failed (choose from lost, oom)")],
)
def test_parse_retries_on_refuses(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
        retry_policy.parse_retries_on(text)
