"""`[queue] lease`: how long a runner may go unheard-from before it stops its jobs,
and the rule that refuses a lease that could let a job run twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.config import ConfigError, parse_config
from nvq.config.lease import default_lease, effective_lease, heartbeat_interval, margin

P = "/home/me/.nvq/config.toml"


def test_the_default_lease_leaves_the_kill_grace_and_two_margins() -> None:
    assert margin(120.0) == 12.0 and margin(10.0) == 2.0
    assert default_lease(120.0, 10.0) == 86.0
    queue = parse_config({}, Path(P)).queue
    assert effective_lease(queue.lease, queue.node_grace, queue.kill_grace) == 86.0


def test_no_lease_when_node_grace_is_too_short_or_it_is_off() -> None:
    assert default_lease(2.0, 2.0) is None
    queue = parse_config({"queue": {"lease": "off"}}, Path(P)).queue
    assert effective_lease(queue.lease, queue.node_grace, queue.kill_grace) is None


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
            {"node_grace": "8s", "kill_grace": "1s", "lease": "5s"},
            "queue.lease: lease 5s + kill_grace 1s + margin 2s must be less than "
            "node_grace 8s, or a partition could run a job twice",
        ),
        (
            {"lease": "2m"},
            "queue.lease: lease 120s + kill_grace 10s + margin 12s must be less than "
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
