"""The lease on a real runner: silent past it, the runner stops its reassignable
jobs itself and journals `AttemptFenced` first; a `--no-reassign` job runs on; a job
that ended on its own while the runner could not look (SIGSTOPped) keeps its exit."""

from __future__ import annotations

import os
import signal
import time

from nvq_runner.jobfiles import JobDir
from nvq_runner.launcher import runner_pid
from nvq_runner.protocol import AttemptFenced, Heartbeat, JobExited, JobStarted
from tests.runner.test_live import Node, job, until

LEASE = 0.5


def test_a_silent_daemon_gets_reassignable_jobs_stopped(node: Node) -> None:
    node.start()
    c, hello = node.hello()
    assert "lease" in hello.features
    gates = {i: node.home / f"gate{i}" for i in (1, 2, 3)}
    for i, gate in gates.items():
        body = f"while [ ! -e {gate} ]; do sleep 0.05; done"
        c.send(job(i, body, kill_grace=1, reassign=i != 2))
        c.expect(JobStarted, job_id=i)
    c.send(Heartbeat(lease=LEASE))
    heard = time.monotonic()  # the last frame the runner gets
    pid = runner_pid(node.home)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        # Job 3 ends on its own while the runner cannot see it, and the lease lapses.
        gates[3].touch()
        exit3 = JobDir(node.home / "jobs", 3).exit
        until(lambda: exit3.exists() and time.monotonic() - heard > 2 * LEASE,
              "job 3 to end and the lease to lapse")
    finally:
        os.kill(pid, signal.SIGCONT)
    seen: list[object] = []
    until(lambda: _collect(c, seen) and {e.job_id for e in seen if isinstance(e, JobExited)}
          >= {1, 3}, "jobs 1 and 3 to end")
    fenced = [(e.job_id, e.attempt) for e in seen if isinstance(e, AttemptFenced)]
    assert fenced == [(1, 1)]  # not job 3, which ended first, nor --no-reassign job 2
    exits = {e.job_id: e for e in seen if isinstance(e, JobExited)}
    assert (exits[3].reason, exits[3].exit_code) == ("exit", 0)
    assert (exits[1].reason, exits[1].signal) == ("killed", 15)
    fence = next(e for e in seen if isinstance(e, AttemptFenced))
    assert fence.lease == LEASE and fence.silent_for >= LEASE
    assert seen.index(fence) < seen.index(exits[1])  # journaled before its exit
    # Job 2 runs on; a daemon that returns renews the lease.
    _, again = node.hello()
    assert [a.job_id for a in again.active] == [2]
    gates[2].touch()


def _collect(c: object, seen: list[object]) -> bool:
    seen += c.events(0.2)  # type: ignore[attr-defined]
    return True
