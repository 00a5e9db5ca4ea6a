"""The pending queue kept between placement passes, grouped by request shape. Pure.

A placement pass (`nvq.domain.placement.place`) considers pending jobs in dispatch
order (priority, then rank, then id) and only ever takes capacity away while it runs.
So among jobs that ask for exactly the same thing, the ones it places are a prefix of
them in dispatch order, and no more of them than the free capacity can hold: once
one does not fit, none of the later ones does. That lets the daemon hand the pass
only the first `bound + 1` members of each group (`window`) instead of the whole
queue, and get the same decisions: 100,000 identical array members cost one check.

A group's shape is everything the pass reads from a job except its place in the
order: cards, memory per card, CUDA, host memory, `--node`, who submitted it (busy
nodes; fair share counts usage per user or per submitter label), when it may begin
(`--begin`), its time limits (Slurm pilots, backfill), where an in-place job may run, and
the array it belongs to when that array has a `%K` limit. Jobs with dependencies or
in a lane are not grouped (`singles`): their dependency or lane state is per job.

Members are kept in a list sorted by dispatch key that is appended to (submissions
arrive in rank order) and re-sorted only when a key arrives out of order; removals
are lazy (the key stays until the front passes it), so an exit that dispatches the
head of a 100,000-member group costs O(1), not a rebuild.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from nvq.domain.placement import NodeSlot
from nvq.model import JobRecord, JobState

OrderKey = tuple[int, float, int]  # (−priority, rank, id): dispatch order, low first
Shape = tuple[Any, ...]


def order_key(job: JobRecord) -> OrderKey:
    return (-job.spec.priority, job.rank, job.id)


def shape_of(job: JobRecord) -> Shape | None:
    """The job's group, or None when it must be looked at on its own (dependencies,
    lanes: their state is per job, not per shape)."""
    if job.spec.after or job.spec.after_any or job.spec.lane is not None:
        return None
    return (
        job.spec.gpus,
        job.spec.vram_mb,
        job.spec.node,
        job.spec.cuda,
        job.spec.memory_mb,
        job.spec.image is not None,
        job.user,
        job.spec.submitter,
        job.spec.timeout,
        job.spec.max_runtime,
        job.spec.in_place,
        job.spec.cwd if job.spec.in_place else None,
        job.spec.begin_at,
        job.spec.reservation,
        job.spec.quiet,
        job.array_id if job.array_limit is not None else None,
        job.array_limit,
    )


class Group:
    """Pending jobs of one shape, in dispatch order."""

    __slots__ = ("_keys", "_sorted", "_start", "members", "shape")

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.members: dict[int, JobRecord] = {}
        self._keys: list[OrderKey] = []  # sorted from _start on once _sorted; may hold stale keys
        self._start = 0
        self._sorted = True

    def __len__(self) -> int:
        return len(self.members)

    def put(self, job: JobRecord) -> None:
        old = self.members.get(job.id)
        self.members[job.id] = job
        key = order_key(job)
        if old is not None and order_key(old) == key:
            return
        if self._keys and key <= self._keys[-1]:
            self._sorted = False
        self._keys.append(key)

    def drop(self, job_id: int) -> None:
        self.members.pop(job_id, None)
        if not self.members:
            self._keys.clear()
            self._start = 0
            self._sorted = True

    def ordered(self) -> Iterator[JobRecord]:
        """The members in dispatch order (lazily: a window reads only its first few)."""
        if not self._sorted:
            self._keys = sorted(set(self._keys[self._start :]))
            self._start = 0
            self._sorted = True
        elif self._start > 64 and self._start * 2 > len(self._keys):
            del self._keys[: self._start]  # compact what the front has passed
            self._start = 0
        keys, members = self._keys, self.members
        front = True
        for i in range(self._start, len(keys)):
            key = keys[i]
            job = members.get(key[2])
            if job is None or order_key(job) != key:
                if front:
                    self._start = i + 1  # a removed or moved member: never needed again
                continue
            front = False
            yield job


class PendingGroups:
    """Every pending job, grouped (see the module docstring). Fed each job's new
    version (`update`); reads the window a pass needs."""

    def __init__(self) -> None:
        self.groups: dict[Shape, Group] = {}
        self.singles: dict[int, JobRecord] = {}
        self._where: dict[int, Shape | None] = {}

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, job_id: int) -> bool:
        return job_id in self._where

    def update(self, job: JobRecord) -> None:
        """Take the job's current version: in if pending, out otherwise."""
        if job.state is not JobState.PENDING:
            self.drop(job.id)
            return
        shape = shape_of(job)
        if job.id in self._where and self._where[job.id] != shape:
            self.drop(job.id)
        self._where[job.id] = shape
        if shape is None:
            self.singles[job.id] = job
            return
        group = self.groups.get(shape)
        if group is None:
            group = self.groups[shape] = Group(shape)
        group.put(job)

    def drop(self, job_id: int) -> None:
        if job_id not in self._where:
            return
        shape = self._where.pop(job_id)
        if shape is None:
            self.singles.pop(job_id, None)
            return
        group = self.groups[shape]
        group.drop(job_id)
        if not group:
            del self.groups[shape]

    def group_of(self, job_id: int) -> Group | None:
        shape = self._where.get(job_id)
        return None if shape is None else self.groups.get(shape)

    def jobs(self) -> Iterator[JobRecord]:
        """Every pending job, in no particular order."""
        yield from self.singles.values()
        for group in self.groups.values():
            yield from group.members.values()

    def window(
        self, bound: Callable[[JobRecord], int], skip: Iterable[int] = ()
    ) -> tuple[list[JobRecord], list[JobRecord]]:
        """(singles, grouped): every single, and the first `bound(first member) + 1`
        members of each group (less those in `skip`), enough for a pass to reach the
        same decisions as over all of them. `bound` is an upper bound on how many jobs
        of that shape one pass could place. A `%K` array whose members are not all in
        one group is read to its first K members, so that the `%K` admission sees the
        same members it would see over the whole queue."""
        skipped = set(skip)
        singles = [j for j in self.singles.values() if j.id not in skipped]
        sources: dict[int, int] = {}  # limited array → groups and singles holding members
        for job in singles:
            if job.array_id is not None and job.array_limit is not None:
                sources[job.array_id] = 2  # any single: read its groups to K
        for shape in self.groups:
            array_id = shape[-2]
            if array_id is not None:
                sources[array_id] = sources.get(array_id, 0) + 1
        grouped: list[JobRecord] = []
        for shape, group in self.groups.items():
            members = (j for j in group.ordered() if j.id not in skipped)
            first = next(members, None)
            if first is None:
                continue
            take = bound(first) + 1
            array_id, limit = shape[-2], shape[-1]
            if array_id is not None and limit is not None:
                take = max(take, limit) if sources.get(array_id, 0) > 1 else min(take, limit)
            grouped.append(first)
            grouped.extend(itertools.islice(members, max(0, take - 1)))
        return singles, grouped


class Capacity:
    """Upper bounds on how many jobs of one (cards, memory per card) request a pass
    over `slots` could place: the free capacity ignoring every other rule (node
    prefixes, CUDA, host memory, busy owners only lower it)."""

    def __init__(self, slots: Iterable[NodeSlot], *, headroom_mb: int, max_cpu_jobs: int) -> None:
        free_cards: dict[int, int] = {}  # free MiB → how many such cards (alike cards share)
        self._cpu = 0  # CPU-job slots left
        for slot in slots:
            if not slot.accepting:
                continue
            self._cpu += max(0, max_cpu_jobs - slot.cpu_jobs)
            for g in slot.gpus:
                free = g.total_mb - g.foreign_mb - g.queue_mb - headroom_mb
                if g.schedulable and not g.out and free >= 0:
                    free_cards[free] = free_cards.get(free, 0) + 1
        self._free = sorted(free_cards.items(), reverse=True)  # most free first
        self._cache: dict[tuple[int, int], int] = {}

    def bound(self, gpus: int, vram_mb: int) -> int:
        if gpus <= 0:
            return self._cpu
        if vram_mb <= 0:
            return UNBOUNDED  # cards are not used up by jobs that ask no memory
        key = (gpus, vram_mb)
        cached = self._cache.get(key)
        if cached is None:
            # Each placed job takes `vram_mb` from `gpus` cards: count the slices.
            slices = 0
            for free, count in self._free:
                if free < vram_mb:
                    break
                slices += count * (free // vram_mb)
            cached = self._cache[key] = slices // gpus
        return cached


UNBOUNDED = 1 << 40


def merged(*runs: Iterable[JobRecord]) -> list[JobRecord]:
    """Jobs of several runs, each already in dispatch order, in dispatch order."""
    return list(heapq.merge(*runs, key=order_key))
