"""What shared a job's cards while it ran: each attempt's contention record, so that a
sweep's results can be compared fairly (a run beside someone's 95 % job is not a
run on an empty card). Pure, apart from the per-attempt tally it fills.

From each sample the runner already takes, per card the job holds: the memory of the
processes not of this job (other queue jobs' and work the queue did not start), the
card's utilisation in samples where such processes were on it (NVML reports it per
card, not per process, so this is an upper bound on theirs), and the other queue jobs
placed on the card. When the attempt ends its tally becomes a `Contention`: p50/p95
of both, over every (sample, card), which jobs shared, and `quiet` — true only when no
sample saw anything but this job on its cards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from nvq.model import JobRecord, JobState, NewEvent
from nvq_runner.protocol import GpuSample

EVENT = "attempt_contention"  # the event that carries an ended attempt's record
# Values kept per tally at most: past this every other one is dropped and only every
# second one after is kept, so a week-long attempt costs what a short one does.
KEEP = 2048


class Contention(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt's record. `samples`: the (sample, card) pairs it rests on."""

    samples: int
    foreign_util_p50: int
    foreign_util_p95: int
    foreign_mem_p50_mb: int
    foreign_mem_p95_mb: int
    shared_with: list[int] = []  # other queue jobs that were on its cards
    quiet: bool = False  # nothing but this job on its cards in any sample


class CardShare(msgspec.Struct, frozen=True):
    """One card in one sample, as one job saw it."""

    foreign_util: int  # the card's utilisation while others were on it; 0: none were
    foreign_mb: int
    others: bool  # any process not of this job, or another queue job, on the card
    queue_jobs: tuple[int, ...] = ()


def observe(
    job_id: int, cards: Iterable[int], gpus: Sequence[GpuSample], placed: Mapping[int, Iterable[int]]
) -> list[CardShare]:
    """The job's cards in one sample. `placed`: card → the queue jobs placed on it."""
    by_index = {g.index: g for g in gpus}
    out = []
    for index in cards:
        gpu = by_index.get(index)
        if gpu is None:
            continue
        foreign = [p for p in gpu.processes if p.job_id != job_id]
        jobs = tuple(sorted({j for j in placed.get(index, ()) if j != job_id}
                            | {p.job_id for p in foreign if p.job_id is not None}))
        util = (gpu.util_percent or 0) if foreign else 0
        mb = sum(p.used_mb or 0 for p in foreign)
        out.append(CardShare(util, mb, bool(foreign or jobs), jobs))
    return out


@dataclass
class Sketch:
    """A bounded sample of values, evenly thinned as it grows (`KEEP`)."""

    values: list[int] = field(default_factory=list)
    stride: int = 1
    seen: int = 0

    def add(self, value: int) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.values.append(value)
        if len(self.values) >= KEEP:
            self.values = self.values[::2]
            self.stride *= 2

    def quantile(self, q: float) -> int:
        """The nearest-rank quantile (0 when empty)."""
        if not self.values:
            return 0
        ordered = sorted(self.values)
        rank = max(1, -(-len(ordered) * q // 1))
        return ordered[int(rank) - 1]


@dataclass
class Tally:
    """One running attempt's contention so far."""

    util: Sketch = field(default_factory=Sketch)
    mem: Sketch = field(default_factory=Sketch)
    shared_with: set[int] = field(default_factory=set)
    quiet: bool = True

    def add(self, shares: Iterable[CardShare]) -> None:
        for s in shares:
            self.util.add(s.foreign_util)
            self.mem.add(s.foreign_mb)
            self.shared_with.update(s.queue_jobs)
            if s.others:
                self.quiet = False

    def record(self) -> Contention | None:
        """The record; None when no sample saw the attempt's cards."""
        if not self.util.seen:
            return None
        return Contention(
            samples=self.util.seen,
            foreign_util_p50=self.util.quantile(0.5),
            foreign_util_p95=self.util.quantile(0.95),
            foreign_mem_p50_mb=self.mem.quantile(0.5),
            foreign_mem_p95_mb=self.mem.quantile(0.95),
            shared_with=sorted(self.shared_with),
            quiet=self.quiet,
        )


def placed_on(jobs: Iterable[JobRecord]) -> dict[int, list[int]]:
    """Card → the queue jobs placed on it, for one node's running jobs."""
    on: dict[int, list[int]] = {}
    for j in jobs:
        for index in j.gpus:
            on.setdefault(index, []).append(j.id)
    return on


def closing(
    updated: Iterable[JobRecord], before: Mapping[int, JobRecord], tallies: dict[tuple[int, int], Tally]
) -> list[NewEvent]:
    """The record of each attempt an update ends (a job that ran in `before` and no
    longer runs, or runs a later attempt), as events; their tallies are dropped."""
    events = []
    for new in updated:
        old = before.get(new.id)
        if old is None or old.state is not JobState.RUNNING:
            continue
        if new.state is JobState.RUNNING and new.attempt == old.attempt:
            continue
        tally = tallies.pop((old.id, old.attempt), None)
        record = tally.record() if tally is not None else None
        if record is not None:
            data = {"attempt": old.attempt, "contention": msgspec.to_builtins(record)}
            events.append(NewEvent(EVENT, old.id, old.node, data))
    return events
