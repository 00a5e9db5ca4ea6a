"""Lanes: one GPU (`node:gpu`) and the order its jobs run in. Pure.

The order lives in the database as each queued job's `lane_pos`; the functions here
take the queued ids in lane order and return the new order, which the daemon then
numbers 1..n. Positions are 1-based over queued jobs (not running, not ended): a
running job cannot be reordered. A lane runs one job at a time, strictly in order,
and stops at a head that cannot run (held, paused, waiting on a prerequisite)
rather than stepping over it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nvq.domain import deps
from nvq.errors import UserError
from nvq.model import JobRecord, JobState

_LANE_RE = re.compile(r"([^:\s]+):(\d+)")


class LaneError(UserError, ValueError):
    """A lane request that makes no sense (message for the user)."""


def parse_lane(text: str) -> tuple[str, int]:
    """`"box:0"` → ("box", 0); the node part is a prefix, resolved by the caller."""
    match = _LANE_RE.fullmatch(text.strip())
    if match is None:
        raise LaneError(f"lane {text!r}: expected NODE:GPU, e.g. box406:0")
    return match.group(1), int(match.group(2))


def lane_name(node: str, gpu: int) -> str:
    return f"{node}:{gpu}"


def _index(order: Sequence[int], job_id: int) -> int:
    try:
        return list(order).index(job_id)
    except ValueError:
        raise LaneError(f"job {job_id} is not queued in this lane") from None


def _position(position: str | int, size: int) -> int:
    """`head` or a 1-based position → a 0-based index into a list of `size`."""
    if position == "head":
        return 0
    if position == "tail":
        return size
    try:
        n = int(position)
    except ValueError:
        raise LaneError(f"position {position!r}: expected head, tail or a number from 1") from None
    if n < 1:
        raise LaneError(f"position {n}: positions start at 1")
    return min(n - 1, size)


def move_to(order: Sequence[int], job_id: int, position: str | int) -> list[int]:
    rest = list(order)
    rest.pop(_index(rest, job_id))
    rest.insert(_position(position, len(rest)), job_id)
    return rest


def move_before(order: Sequence[int], job_id: int, other: int) -> list[int]:
    if job_id == other:
        raise LaneError("a job cannot move before itself")
    rest = list(order)
    rest.pop(_index(rest, job_id))
    rest.insert(_index(rest, other), job_id)
    return rest


def swap(order: Sequence[int], a: int, b: int) -> list[int]:
    out = list(order)
    i, j = _index(out, a), _index(out, b)
    out[i], out[j] = out[j], out[i]
    return out


def skip(order: Sequence[int]) -> list[int]:
    """Send the next job to the back."""
    if not order:
        raise LaneError("the lane has no queued job to skip")
    return [*order[1:], order[0]]


def assign(order: Sequence[int], job_id: int, position: str | int) -> list[int]:
    if job_id in order:
        return move_to(order, job_id, position)
    out = list(order)
    out.insert(_position(position, len(out)), job_id)
    return out


def numbered(order: Sequence[int]) -> dict[int, float]:
    return {job_id: float(n) for n, job_id in enumerate(order, start=1)}


def queued_order(jobs: Sequence[JobRecord]) -> list[JobRecord]:
    """A lane's queued jobs in running order."""
    queued = [j for j in jobs if j.state in (JobState.PENDING, JobState.HELD, JobState.PAUSED)]
    return sorted(queued, key=lambda j: (j.lane_pos if j.lane_pos is not None else 0.0, j.id))


@dataclass(frozen=True)
class LaneStatus:
    lane: str
    running: int | None
    queue: list[int] = field(default_factory=list)
    paused: bool = False
    blocked: str | None = None  # "held:<id>", "paused:<id>", "waiting:<id>", "foreign"
    next: int | None = None  # the head, when it may start now (cards permitting)


def lane_status(
    lane: str,
    jobs: Sequence[JobRecord],
    *,
    paused: bool,
    dep_status: Mapping[int, deps.DepStatus],
) -> LaneStatus:
    """What a lane does next. `jobs`: its live jobs; `dep_status`: for pending ones
    with prerequisites (absent means ready)."""
    running = next((j.id for j in jobs if j.state is JobState.RUNNING), None)
    queue = [j.id for j in queued_order(jobs)]
    status = LaneStatus(lane=lane, running=running, queue=queue, paused=paused)
    if running is not None or paused or not queue:
        return status
    head = next(j for j in jobs if j.id == queue[0])
    blocked: str | None = None
    if head.state is JobState.HELD:
        blocked = f"held:{head.id}"
    elif head.state is JobState.PAUSED:
        blocked = f"paused:{head.id}"
    else:
        dep = dep_status.get(head.id, deps.Ready())
        if isinstance(dep, deps.Blocked):
            blocked = f"held:{head.id}"
        elif isinstance(dep, deps.Waiting):
            blocked = f"waiting:{dep.on}"
    if blocked is not None:
        return LaneStatus(lane=lane, running=None, queue=queue, paused=False, blocked=blocked)
    return LaneStatus(lane=lane, running=None, queue=queue, paused=False, next=head.id)
