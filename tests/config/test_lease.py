"""`[queue] lease`: how long a runner may go unheard-from before it stops its jobs,
and the rule that refuses a lease that could let a job run twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.config import ConfigError, parse_config
from nvq.config.lease import (
    default_lease,
    effective_lease,
    heartbeat_interval,
    least_node_grace,
    margin,
    reassign_at,
)

P = "/home/me/.nvq/config.toml"


def test_node_grace_is_the_lease_plus_the_kill_grace_and_a_margin() -> None:
    assert margin(120.0) == 12.0 and margin(10.0) == 2.0
    assert default_lease(120.0, 10.0) == 98.0
    queue = parse_config({}, Path(P)).queue
    assert effective_lease(queue.lease, queue.node_grace, queue.kill_grace) == 98.0
    assert queue.max_downtime == 3600.0


def test_a_node_grace_that_leaves_no_lease_is_refused_with_what_to_set() -> None:
    assert default_lease(2.0, 2.0) is None
    for kill_grace in (0.0, 1.0, 2.0, 10.0, 30.0, 100.0):
        least = least_node_grace(kill_grace)
        assert default_lease(least, kill_grace) is not None
        assert default_lease(least - 1, kill_grace) is None
    with pytest.raises(ConfigError) as info:
        parse_config({"queue": {"node_grace": "5s"}}, Path(P))
    assert str(info.value) == (
        f"{P}: queue.node_grace: node_grace 5s leaves no lease after kill_grace 10s and "
        'margin 2s: set node_grace = "13s" or more (or lease = "off", and a partition '
        "may run a job twice)"
    )
    queue = parse_config({"queue": {"node_grace": "5s", "lease": "off"}}, Path(P)).queue
    assert effective_lease(queue.lease, queue.node_grace, queue.kill_grace) is None


def test_reassignment_waits_for_the_longest_lease_granted() -> None:
    # No lease granted: node_grace from when the daemon noticed.
    assert reassign_at(1000.0, 120.0, 10.0, 0.0) == 1120.0
    # The usual lease, last renewed just before the link went: the same moment.
    assert reassign_at(1000.0, 120.0, 10.0, 1000.0 + 98.0) == 1120.0
    # A longer lease still outstanding (a reload shortened node_grace, or a planned
    # stop granted max_downtime): its end, the kill grace and the margin.
    assert reassign_at(1000.0, 20.0, 2.0, 1000.0 + 3600.0) == 1000.0 + 3600.0 + 2.0 + 2.0


def test_a_safe_lease_is_taken() -> None:
    queue = parse_config(
        {"queue": {"node_grace": "8s", "kill_grace": "1s", "lease": "4.9s"}}, Path(P)
    ).queue
    assert effective_lease(queue.lease, queue.node_grace, queue.kill_grace) == 4.9
    assert heartbeat_interval(4.9) == pytest.approx(0.98)
    assert heartbeat_interval(86.0) == 5.0


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        (
            {"node_grace": "8s", "kill_grace": "1s", "lease": "5.5s"},
            "queue.lease: lease 5.5s + kill_grace 1s + margin 2s must not be more than "
            "node_grace 8s, or a partition could run a job twice",
        ),
        (
            {"lease": "2m"},
            "queue.lease: lease 120s + kill_grace 10s + margin 12s must not be more than "
            "node_grace 120s",
        ),
        ({"lease": "0s"}, "queue.lease: invalid duration '0s': must be more than 0"),
        ({"lease": "soon"}, "queue.lease: invalid duration 'soon'"),
    ],
)
def test_an_unsafe_or_bad_lease_is_refused(queue: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"queue": queue}, Path(P))
    assert str(info.value).startswith(f"{P}: {message}"), str(info.value)
