"""The runner's lease, on a clock the test moves: it lapses after `lease` seconds
without a daemon frame, any frame renews it, and a runner never told one never
fences; and which attempts a lapse stops."""

from __future__ import annotations

import os
import select
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

from nvq_runner.jobfiles import AttemptRecord
from nvq_runner.lease import Lease, fence


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_lease_lapses_after_silence_and_any_frame_renews_it() -> None:
    clock = Clock()
    lease = Lease(clock)
    clock.now += 1000
    assert not lease.lapsed()  # no daemon ever granted one: never fence
    lease.renew(3.0)
    clock.now += 2.9
    assert not lease.lapsed()
    lease.renew()  # any frame
    clock.now += 2.9
    assert not lease.lapsed() and lease.silent_for() == pytest.approx(2.9)
    clock.now += 0.2
    assert lease.lapsed()
    assert lease.tick() == 0.3  # a tenth of the lease: acted on well within the margin


def test_a_heartbeat_changes_the_length_but_zero_does_not_clear_it() -> None:
    clock = Clock()
    lease = Lease(clock)
    lease.renew(10.0)
    lease.renew(0.0)
    assert lease.seconds == 10.0
    lease.renew(2.0)
    clock.now += 2.0
    assert lease.lapsed()


class FakeJobs:
    """What `fence` uses of a JobManager: its running attempts and `terminate`."""

    def __init__(self, running: dict[int, Any]) -> None:
        self.running = running
        self.terminated: list[tuple[int, str]] = []

    def terminate(self, run: Any, reason: str, grace: float) -> None:
        self.terminated.append((run.rec.job_id, reason))


def test_fencing_skips_an_attempt_that_already_ended_and_no_reassign_ones() -> None:
    procs = {i: subprocess.Popen(["sleep", "30"] if i != 3 else ["true"]) for i in (1, 2, 3)}
    fds = {i: os.pidfd_open(p.pid) for i, p in procs.items()}
    try:
        # Job 3 has exited; nobody has handled it yet (its pidfd is readable).
        select.select([fds[3]], [], [], 30)
        running = {
            i: SimpleNamespace(
                rec=AttemptRecord(job_id=i, attempt=1, started_at=0.0, kill_grace=1.0,
                                  boot_id="b", reassign=i != 2),
                pidfd=fds[i],
            )
            for i in (1, 2, 3)
        }
        jobs = FakeJobs(running)
        events: list[object] = []
        fenced = fence(jobs, lambda build: events.append(build(7)), 3.0, 3.4)  # type: ignore[arg-type]
        assert fenced == [(1, 1)] and jobs.terminated == [(1, "fenced")]
        assert [(e.job_id, e.seq, e.lease, e.silent_for) for e in events] == [(1, 7, 3.0, 3.4)]  # type: ignore[attr-defined]
    finally:
        for i, p in procs.items():
            p.kill()
            p.wait()
            os.close(fds[i])
