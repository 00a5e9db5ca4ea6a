"""A job made again from what its node kept (`nvq.domain.recovery`), and what the
runner reads of its job directories for it (`nvq_runner.recovery`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nvq.domain import recovery
from nvq.model import JobState
from nvq_runner import recovery as kept
from nvq_runner.jobfiles import AttemptRecord, JobDir
from nvq_runner.protocol import Start, StartRecord

START = Start(job_id=9, attempt=2, node="n1", name="train", command="python t.py", gpus=[1],
              env={"A": "1"}, nonce="abcdef12", queue_id="q1234567", user="ann",
              reassign=False)


def test_each_end_a_node_kept_gives_its_state() -> None:
    def state(**kw: Any) -> tuple[JobState, int | None]:
        job = recovery.recovered_job(StartRecord(start=START, started_at=5.0, **kw), "n1", "me")
        return job.state, job.exit_code

    assert state(running=True) == (JobState.RUNNING, None)
    assert state(running=False, exit_code=0, ended_at=9.0) == (JobState.COMPLETED, 0)
    assert state(running=False, exit_code=3, ended_at=9.0) == (JobState.FAILED, 3)
    assert state(running=False, exit_code=0, killed=True, ended_at=9.0)[0] is JobState.FAILED
    assert state(running=False) == (JobState.LOST, None)
    job = recovery.recovered_job(StartRecord(start=START, started_at=5.0, running=True), "n1",
                                 "me")
    assert (job.id, job.attempt, job.node, job.gpus, job.user, job.nonce) == (
        9, 2, "n1", [1], "ann", "abcdef12")
    assert job.spec.tags == ["recovered"] and job.spec.no_reassign and job.spec.env == {"A": "1"}


def test_the_runner_reports_the_newest_attempt_it_kept(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 9, "q1234567", "abcdef12")
    kept.write_start(d, START)
    assert (d.path / kept.START_FILE).stat().st_mode & 0o777 == 0o600
    d.write_record(AttemptRecord(job_id=9, attempt=2, started_at=5.0, kill_grace=1.0,
                                 boot_id="b", pid=42))
    d.exit.write_text("3\n")
    JobDir(tmp_path, 10).path.mkdir()  # asked about, nothing kept
    (found,) = kept.records(tmp_path, [9, 10], "q1234567", running=[])
    assert (found.start, found.running, found.pid, found.exit_code) == (START, False, 42, 3)
    (alive,) = kept.records(tmp_path, [9], "q1234567", running=[(9, 2)])
    assert alive.running and alive.exit_code is None
    assert kept.records(tmp_path, [9], "another", running=[]) == []
