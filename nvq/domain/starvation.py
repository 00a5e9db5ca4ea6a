"""No starvation: a reservation for a long-waiting head of the queue, and backfill.
Pure, on top of `nvq.domain.placement.place`.

Once the first job in dispatch order has waited longer than `[queue]
starvation_after` and still cannot start, it reserves the node that will free up
soonest (its running jobs' timeouts tell when; a job with no timeout may never end).
Other jobs may start on that node only where they cannot delay it: their own
`--timeout` ends before the node is expected to be free (backfill). Every other node
is placed as usual.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult, dispatch_key, place
from nvq.domain.quotas import Caps


@dataclass(frozen=True)
class RunningJob:
    node: str
    ends_at: float | None  # started + timeout; None: no timeout, may run forever


@dataclass(frozen=True)
class Reservation:
    job_id: int
    node: str
    ready_at: float | None  # when the node's running jobs must have ended; None: unknown


def _could_hold(slot: NodeSlot, job: PendingJob, headroom_mb: int) -> bool:
    if job.gpu is not None:
        return slot.name == job.node
    if job.node is not None and not slot.name.startswith(job.node):
        return False
    cards = [g for g in slot.gpus if g.schedulable and not g.out and g.total_mb - headroom_mb >= job.vram_mb]
    return len(cards) >= job.gpus


def choose_node(
    head: PendingJob, slots: Sequence[NodeSlot], running: Sequence[RunningJob], headroom_mb: int
) -> tuple[str, float | None] | None:
    """The accepting node that could hold `head` when empty and frees up soonest."""
    best: tuple[float, str] | None = None
    for slot in slots:
        if not slot.accepting or not _could_hold(slot, head, headroom_mb):
            continue
        ends = [r.ends_at for r in running if r.node == slot.name]
        ready = max((math.inf if e is None else e for e in ends), default=-math.inf)
        if best is None or (ready, slot.name) < best:
            best = (ready, slot.name)
    if best is None:
        return None
    ready = best[0]
    # No running jobs (-inf): free now. One without a timeout (inf): unknown.
    return best[1], (None if ready == math.inf else max(ready, 0.0))


def place_fairly(
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    *,
    waiting_since: Mapping[int, float],
    timeouts: Mapping[int, float | None],
    running: Sequence[RunningJob],
    now: float,
    starvation_after: float,
    headroom_mb: int,
    max_cpu_jobs: int,
    usage: Mapping[str, float] | None = None,
    caps: Caps | None = None,
) -> tuple[PlacementResult, Reservation | None]:
    """`place`, plus a reservation when the head of `pending` (dispatch order, fair
    share included: `usage`) starves. `caps`: users' limits, as for `place`."""
    result = place(
        slots, pending, headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs, usage=usage, caps=caps
    )
    if not pending:
        return result, None
    head = min(pending, key=dispatch_key(usage))
    settled = {p.job_id for p in result.placements} | {u.job_id for u in result.unschedulable}
    if head.id in settled or now - waiting_since.get(head.id, now) < starvation_after:
        return result, None
    chosen = choose_node(head, slots, running, headroom_mb)
    if chosen is None:
        return result, None
    node, ready_at = chosen
    reservation = Reservation(job_id=head.id, node=node, ready_at=ready_at)
    others = [j for j in pending if j.id != head.id]
    # Everyone else, elsewhere: the reserved node counts for "could ever fit" only.
    closed = [msgspec.structs.replace(s, accepting=False) if s.name == node else s for s in slots]
    elsewhere = place(
        closed, others, headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs, usage=usage, caps=caps
    )
    left = None
    if caps:
        # What the jobs placed elsewhere took is not there for the reserved node.
        left = caps.copy()
        by_id = {j.id: j for j in others}
        for p in elsewhere.placements:
            left.took(by_id[p.job_id].user, len(p.gpus) if p.gpus else by_id[p.job_id].gpus)
    taken = {p.job_id for p in elsewhere.placements} | {u.job_id for u in elsewhere.unschedulable}
    backfill = [
        j
        for j in others
        if j.id not in taken and may_backfill(timeouts.get(j.id), now, reservation)
    ]
    on_reserved = place(
        [s for s in slots if s.name == node],
        backfill,
        headroom_mb=headroom_mb,
        max_cpu_jobs=max_cpu_jobs,
        usage=usage,
        caps=left,
    )
    merged = PlacementResult(
        placements=[*elsewhere.placements, *on_reserved.placements],
        unschedulable=list(elsewhere.unschedulable),
    )
    return merged, reservation


def may_backfill(timeout: float | None, now: float, reservation: Reservation) -> bool:
    """A job may use the reserved node only if it is sure to be gone in time."""
    if timeout is None or reservation.ready_at is None:
        return False
    return now + timeout <= reservation.ready_at
