"""The runner's lease, on a clock the test moves: it lapses after `lease` seconds
without a daemon frame, any frame renews it, and a runner never told one never
fences."""

from __future__ import annotations

import pytest

from nvq_runner.lease import Lease


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
