"""How long a node's runner may go without hearing from the daemon before it stops
the jobs the daemon would run elsewhere (its *lease*), and the one rule that keeps
two copies of a job from ever running at once across a partition.

The rule: the daemon never gives a job of an unreachable node to another node before
the longest lease it may still have granted that node's runner has certainly run
out, plus `kill_grace` (the runner's SIGTERM → SIGKILL) and a margin:

    reassign at  max(noticed_down + node_grace,  granted_until + kill_grace + margin)

`granted_until` is the daemon's own record (`nvq.domain.lease_book`): every frame it
writes renews the runner's lease, so it is the last write plus the longest lease the
runner may still hold (a reload's shorter lease counts only once the runner has
said it holds it; `daemon stop` grants a long one, `max_downtime`). It is kept in
queue.db, so a daemon that starts again honours what the previous one promised.

`margin` = max(2 s, node_grace / 10) covers what neither side can measure exactly: a
frame's time on the wire, the runner's timer firing late on a loaded node, a
SIGKILLed process taking a moment to die, and the two clocks' rates.

`node_grace` is the one knob: the lease is `node_grace − kill_grace − margin` (98 s
with the defaults, 2 m and 10 s), so both terms of the rule fall together. A
`node_grace` too short to leave a lease of `MIN_LEASE` is refused, at start and at
reload, unless `lease = "off"` says a partition may run a job twice. A shorter lease
may be set (`[queue] lease`, it must fit); a longer one cannot.
"""

from __future__ import annotations

import math
import time

MIN_MARGIN = 2.0
MIN_LEASE = 1.0  # shorter than this, a busy daemon's heartbeats would not keep up


def margin(node_grace: float) -> float:
    return max(MIN_MARGIN, node_grace / 10)


def default_lease(node_grace: float, kill_grace: float) -> float | None:
    lease = node_grace - kill_grace - margin(node_grace)
    return lease if lease >= MIN_LEASE else None


def least_node_grace(kill_grace: float) -> float:
    """The shortest `node_grace` that leaves a lease of MIN_LEASE (whole seconds)."""
    need = kill_grace + MIN_LEASE
    grace = need + MIN_MARGIN
    if grace / 10 > MIN_MARGIN:  # margin is a tenth of node_grace: solve for it
        grace = need / 0.9
    return float(math.ceil(grace))


def no_room(node_grace: float, kill_grace: float) -> str | None:
    """Why this `node_grace` leaves no lease (None when it does)."""
    if default_lease(node_grace, kill_grace) is not None:
        return None
    return (
        f"node_grace {node_grace:g}s leaves no lease after kill_grace {kill_grace:g}s and "
        f"margin {margin(node_grace):g}s: set node_grace = \"{least_node_grace(kill_grace):g}s\" "
        f"or more (or lease = \"off\", and a partition may run a job twice)"
    )


def lease_problem(lease: float, node_grace: float, kill_grace: float) -> str | None:
    """Why a configured lease is unsafe (None when it is not)."""
    m = margin(node_grace)
    if lease + kill_grace + m > node_grace:
        return (
            f"lease {lease:g}s + kill_grace {kill_grace:g}s + margin {m:g}s must not be more "
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


def reassign_at(
    noticed_down: float, node_grace: float, kill_grace: float, granted_until: float
) -> float:
    """When the rule first allows the jobs of a node unreachable since `noticed_down`
    to run elsewhere (wall clock; `granted_until` 0: no lease was ever granted)."""
    at = noticed_down + node_grace
    if granted_until > 0:
        at = max(at, granted_until + kill_grace + margin(node_grace))
    return at


def reassign_reason(
    node: str, noticed_down: float, node_grace: float, kill_grace: float, granted_until: float
) -> str:
    """Why a node's jobs run elsewhere now, in config.toml's words: which term of the
    rule (`reassign_at`) was the later one."""
    from nvq.config.changes import duration_text

    def clock(at: float) -> str:
        return time.strftime("%H:%M:%S", time.localtime(at))

    head = f"node {node} unreachable since {clock(noticed_down)}"
    if granted_until <= 0:
        return f"{head} for node_grace {duration_text(node_grace)} (it held no lease)"
    m = margin(node_grace)
    after_lease = (
        f"its lease ran out at {clock(granted_until)}, then kill_grace "
        f"{duration_text(kill_grace)} and margin {duration_text(m)}"
    )
    if granted_until + kill_grace + m >= noticed_down + node_grace:
        return f"{head}: {after_lease} passed"
    return f"{head} for node_grace {duration_text(node_grace)}; {after_lease} had passed"
