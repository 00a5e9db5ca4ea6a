"""The dispatch order and how a person changes it: pure.

Pending jobs dispatch by priority (higher first), then rank (lower first; a job's
rank is a sequence number the store gives it at insert — its id — unless someone
moved it; never the wall clock, which can step back), then id. `job priority ID 5` sets
the priority, `+1` / `-2` adjust it, and `--up K` / `--down K` move a pending job K
places in that order by giving it the priority and a rank between its new
neighbours — so a move is one row changed, and every other job keeps its place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nvq.model import JobRecord
from nvq.values import MAX_INT, MIN_INT

_CHANGE_RE = re.compile(r"([+-]?)(\d+)")


@dataclass(frozen=True)
class Key:
    id: int
    priority: int
    rank: float

    def sort_key(self) -> tuple[int, float, int]:
        return (-self.priority, self.rank, self.id)


def key_of(job: JobRecord) -> Key:
    return Key(job.id, job.spec.priority, job.rank)


def dispatch_order(jobs: Sequence[JobRecord]) -> list[JobRecord]:
    # Same order as Key.sort_key, without a Key per job: this runs over the whole
    # queue on every placement pass.
    return sorted(jobs, key=lambda j: (-j.spec.priority, j.rank, j.id))


def new_priority(current: int, change: str) -> int:
    """`"5"` sets, `"+1"` / `"-2"` adjust. Raises ValueError on anything else."""
    match = _CHANGE_RE.fullmatch(change.strip())
    if match is None:
        raise ValueError(f"priority {change!r}: expected a number (5) or a change (+1, -2)")
    sign, digits = match.groups()
    value = int(digits)
    if sign == "+":
        value = current + value
    elif sign == "-":
        value = current - value
    if not MIN_INT <= value <= MAX_INT:
        raise ValueError(
            f"priority {change.strip()} would make it {value}: a priority is from "
            f"{MIN_INT} to {MAX_INT}"
        )
    return value


def move(order: Sequence[Key], job_id: int, places: int) -> tuple[int, float]:
    """The (priority, rank) that puts `job_id` `places` earlier (negative: later) in
    `order`, clamped to the ends. `order` is every pending job, the mover included."""
    ordered = sorted(order, key=Key.sort_key)
    index = next((i for i, k in enumerate(ordered) if k.id == job_id), None)
    if index is None:
        raise ValueError(f"job {job_id} is not pending: only a pending job can be moved")
    me = ordered.pop(index)
    target = max(0, min(len(ordered), index - places))
    if not ordered or target == index:
        return me.priority, me.rank
    if target < len(ordered):
        after = ordered[target]
        before = ordered[target - 1] if target > 0 else None
        if before is not None and before.priority == after.priority:
            return after.priority, (before.rank + after.rank) / 2
        return after.priority, after.rank - 1.0
    before = ordered[-1]
    return before.priority, before.rank + 1.0
