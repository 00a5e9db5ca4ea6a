"""Each attempt keeps its logs: a new attempt on the same node moves the previous
one's to `attempts/<n>/`, and `Tail` reads either by attempt number."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.jobfiles import AttemptRecord, JobDir
from nvq_runner.protocol import JobExited, LogData, Tail
from tests.cluster import Nvq
from tests.runner.test_live import Client, Node, job


def record(attempt: int) -> AttemptRecord:
    return AttemptRecord(job_id=7, attempt=attempt, started_at=0.0, kill_grace=1.0, boot_id="b")


def test_a_new_attempt_keeps_the_previous_logs(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 7)
    d.path.mkdir()
    d.write_record(record(1))
    d.stdout.write_text("first\n")
    d.stderr.write_text("first err\n")
    d.make_way(2)
    assert not d.stdout.exists()
    assert (d.path / "attempts" / "1" / "stdout.log").read_text() == "first\n"
    assert (d.path / "attempts" / "1" / "stderr.log").read_text() == "first err\n"
    d.write_record(record(2))
    d.stdout.write_text("second\n")
    assert d.attempt_log("stdout", 1) == d.path / "attempts" / "1" / "stdout.log"
    assert d.attempt_log("stdout", 2) == d.stdout
    assert d.attempt_log("stdout", None) == d.stdout
    assert d.attempt_log("stdout", 3) is None  # never ran here


def test_the_same_attempt_again_keeps_its_own_log_in_place(tmp_path: Path) -> None:
    d = JobDir(tmp_path, 7)
    d.path.mkdir()
    d.write_record(record(1))
    d.stdout.write_text("x\n")
    d.make_way(1)
    assert d.stdout.read_text() == "x\n" and not (d.path / "attempts").exists()


def read_tail(c: Client, req: int) -> tuple[bytes, str | None]:
    data = b""
    while not (m := c.expect(LogData, req=req)).eof:
        data += m.data
    return data, m.error


def test_tail_by_attempt_on_a_live_runner(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(1, "echo attempt $NVQ_ATTEMPT"))
    c.expect(JobExited, job_id=1)
    c.send(job(1, "echo attempt $NVQ_ATTEMPT", attempt=2))
    c.expect(JobExited, job_id=1, attempt=2)
    c.send(Tail(req=1, job_id=1, attempt=1))
    assert read_tail(c, 1) == (b"attempt 1\n", None)
    c.send(Tail(req=2, job_id=1))
    assert read_tail(c, 2) == (b"attempt 2\n", None)
    c.send(Tail(req=3, job_id=1, attempt=5))
    assert read_tail(c, 3) == (b"", "no log of attempt 5 of job 1 on this node")


def test_job_logs_attempt_after_a_requeue(nvq: Nvq) -> None:
    j = nvq.submit("--gpus", "0", "--", "sh", "-c", "echo run $NVQ_ATTEMPT")
    nvq.wait(j["id"])
    nvq.ok("job", "requeue", str(j["id"]))
    code, (done,) = nvq.wait(j["id"])
    assert code == 0 and done["attempt"] == 2
    jid = str(j["id"])
    assert nvq.ok("job", "logs", jid, "--attempt", "1").out == "run 1\n"
    assert nvq.ok("job", "logs", jid).out == "run 2\n"
    assert nvq.ok("job", "logs", jid, "--attempt", "2").out == "run 2\n"
    missing = nvq.run("job", "logs", jid, "--attempt", "9")
    assert missing.code == 2 and "has no attempt 9 (attempts: 1, 2)" in missing.err
    shown = nvq.show(j["id"])
    assert [a["attempt"] for a in shown["attempts"]] == [1, 2]
