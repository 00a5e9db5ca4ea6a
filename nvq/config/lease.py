"""How long a node's runner may go without hearing from the daemon before it stops
the jobs the daemon would run elsewhere (its *lease*), and the rule that keeps two
copies of a job from ever running at once across a partition.

The daemon gives a job of an unreachable node to another node only after
`node_grace` (counted from when it noticed the link was gone, which is after the
runner last heard from it). The runner stops its reassignable jobs once it has heard
nothing for `lease`; each is dead at most `kill_grace` later (SIGTERM, then SIGKILL).
So the old copy is gone before the new one can start if

    lease + kill_grace + margin < node_grace

where `margin` = max(2 s, node_grace / 10) covers what both sides cannot measure
exactly: the runner's timer firing late on a loaded node, a SIGKILLed process taking
a moment to die, and the two hosts' clocks running at slightly different rates (each
side measures an interval on its own monotonic clock, so an offset between them does
not matter). A lease set in config.toml that breaks the rule is refused. Unset, the
lease is `node_grace − kill_grace − 2 × margin` (one margin for the rule, one spare):
86 s with the defaults (2 m, 10 s). When `node_grace` is too short to leave any lease
that way, or with `lease = "off"`, there is none: runners never stop jobs on their
own, and a partition longer than `node_grace` can run a job twice.
"""

from __future__ import annotations

MIN_MARGIN = 2.0
MIN_LEASE = 1.0  # shorter than this, a busy daemon's heartbeats would not keep up


def margin(node_grace: float) -> float:
    return max(MIN_MARGIN, node_grace / 10)


def default_lease(node_grace: float, kill_grace: float) -> float | None:
    lease = node_grace - kill_grace - 2 * margin(node_grace)
    return lease if lease >= MIN_LEASE else None


def lease_problem(lease: float, node_grace: float, kill_grace: float) -> str | None:
    """Why a configured lease is unsafe (None when it is not)."""
    m = margin(node_grace)
    if lease + kill_grace + m >= node_grace:
        return (
            f"lease {lease:g}s + kill_grace {kill_grace:g}s + margin {m:g}s must be less "
            f"than node_grace {node_grace:g}s, or a partition could run a job twice"
        )
    return None


def heartbeat_interval(lease: float) -> float:
    """How often the daemon speaks on an idle link: five chances per lease, at most
    every 5 s."""
    return max(0.1, min(5.0, lease / 5))


def effective_lease(configured: float | None, node_grace: float, kill_grace: float) -> float | None:
    """The lease runners are given: the configured one (0: "off"), else the default.
    None: no lease."""
    if configured is None:
        return default_lease(node_grace, kill_grace)
    return configured if configured > 0 else None
