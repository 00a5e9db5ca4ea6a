"""Job ids reused by a restored queue name new jobs when the Start says who they are
(queue id and nonce): nothing of the old job with the same id is taken for them."""

from __future__ import annotations

import os
import signal

from nvq_runner.launcher import runner_pid
from nvq_runner.protocol import JobExited, JobLost, JobStarted, Kill, LogData, Tail
from tests.runner.test_live import Client, Node, job, stop_runner


def output(c: Client, req: int, job_id: int) -> bytes:
    c.send(Tail(req=req, job_id=job_id, lines=-1))
    data = b""
    while not (m := c.expect(LogData, req=req)).eof:
        data += m.data
    return data


def test_reused_job_id_with_a_new_nonce_is_a_new_job(node: Node) -> None:
    node.start()
    c, hello = node.hello()
    assert (hello.queue_id, hello.max_job_id) == ("", 0)
    c.send(job(4, "echo old", queue_id="q1", nonce="aaaa"))
    c.expect(JobExited, job_id=4)
    c.send(job(4, "echo new", queue_id="q1", nonce="bbbb"))
    started = c.expect(JobStarted, job_id=4)
    assert started.attempt == 1
    c.expect(JobExited, job_id=4)
    assert output(c, 1, 4) == b"new\n"
    assert (node.home / "jobs" / "q1-4-aaaa" / "stdout.log").read_bytes() == b"old\n"
    c.send(job(4, "echo again", queue_id="q1", nonce="bbbb"))  # the same attempt: seen
    assert [e for e in c.events(0.5) if isinstance(e, JobStarted)] == []

    c.send(job(9, "true", queue_id="q1", nonce="c"))
    c.expect(JobExited, job_id=9)
    _, hello = node.hello()
    assert (hello.queue_id, hello.max_job_id) == ("q1", 9)
    stop_runner(node.home)
    node.start()
    c, hello = node.hello()
    assert (hello.queue_id, hello.max_job_id) == ("q1", 9)
    assert output(c, 2, 4) == b"new\n"  # still the newest job 4 after a restart
    c.send(job(2, "true", queue_id="q2", nonce="d"))
    c.expect(JobExited, job_id=2)
    _, hello = node.hello()
    assert (hello.queue_id, hello.max_job_id) == ("q2", 2)


def test_new_identity_ends_a_running_job_of_the_same_id(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(5, "sleep 30", queue_id="q1", nonce="old"))
    c.expect(JobStarted, job_id=5)
    c.send(job(5, "echo fresh", queue_id="q1", nonce="new", kill_grace=1))
    assert c.expect(JobExited, job_id=5).reason == "killed"
    c.expect(JobStarted, job_id=5)
    assert c.expect(JobExited, job_id=5).exit_code == 0
    assert output(c, 1, 5) == b"fresh\n"


def test_kill_before_start_names_the_identity(node: Node) -> None:
    node.start()
    c, _ = node.hello()
    c.send(job(6, "true", queue_id="q1", nonce="old"))
    c.expect(JobExited, job_id=6)
    c.send(Kill(job_id=6, attempt=1, queue_id="q1", nonce="new"))
    assert c.expect(JobLost, job_id=6).reason == "killed before start"
    c.send(job(6, "echo never", queue_id="q1", nonce="new"))
    assert [e for e in c.events(0.5) if isinstance(e, JobStarted)] == []


def test_a_runner_killed_hard_still_reports_the_newest_job_id(node: Node) -> None:
    """The remembered id is written at most once a second; the job directories made
    before each job ran carry it over a SIGKILL."""
    node.start()
    c, _ = node.hello()
    c.send(job(3, "true", queue_id="q7", nonce="a"))  # a new queue: written at once
    c.expect(JobExited, job_id=3)
    c.send(job(8, "true", queue_id="q7", nonce="b"))  # a higher id: written later
    c.expect(JobExited, job_id=8)
    pid = runner_pid(node.home)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    node.start()
    _, hello = node.hello()
    assert (hello.queue_id, hello.max_job_id) == ("q7", 8)
