"""When a waiting job may start, and what that rests on. Pure: no I/O, no clock.

The queue is played forward: the running jobs end when their end can be known
(`run_end`: a `--timeout`/`--max-runtime`, a progress line, the typical run of their
command), and at each such end `place` — the very pass the daemon runs — is asked again
over the jobs still waiting, in dispatch order, so the jobs ahead take their cards
first; a job that starts there ends again after its own time limit or typical run.
A job's estimate is the moment the played pass places it, and it rests on the end that
freed its cards ("when job 12's timeout ends at 14:20"). A job whose cards are held by
work with no known end gets no time, but the words say which jobs hold them.

The estimate is no promise: a job may end early, new urgent jobs may come, foreign
processes may leave or come. It is exact for the one case a user can reason about —
cards held by jobs that run to their `--timeout`.
"""

from __future__ import annotations

import heapq
import re
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from nvq.domain import preemption
from nvq.domain.placement import NodeSlot, PendingJob, place
from nvq.values import format_duration

# How far the queue is played forward: this many distinct end times at most, and jobs
# deeper in the queue than this get no estimate (`job ls` over a very long queue).
MAX_STEPS = 64
MAX_QUEUE = 5000


class StartEstimate(msgspec.Struct, frozen=True):
    """`at`: the estimated start (Unix seconds), None when it cannot be known;
    `rests_on`: in words, the end it waits for, or why no time can be given."""

    at: float | None
    rests_on: str


class Holder(msgspec.Struct, frozen=True, kw_only=True):
    """A running job as the estimate sees it: what it holds, and when it ends."""

    job_id: int
    node: str
    cards: dict[int, int]  # card index → MiB it holds there; {} for a CPU job
    memory_mb: int = 0
    ends_at: float | None  # None: no end can be known
    ends_because: str = ""  # "job 12's timeout ends at 14:20"


class Queued(msgspec.Struct, frozen=True, kw_only=True):
    """A waiting job: what it asks for, and how long it runs once started."""

    job: PendingJob
    runs_for: float | None  # None: unknown (it holds its cards for good)
    runs_because: str = ""  # "its timeout of 10m0s"


class RunFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What tells when a running job ends."""

    job_id: int
    started_at: float
    timeout: float | None = None
    max_runtime: float | None = None
    progress: str | None = None  # its progress line
    progress_at: float | None = None  # when that line was first seen
    typical: float | None = None  # the typical run of its command or array
    typical_of: int = 0  # how many finished runs that typical run is of


# "3/10", "epoch 3 / 10", "step 1200/5000", or "45%", "45.5 %": the last one counts.
_FRACTION = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*%")


def progress_fraction(line: str | None) -> float | None:
    """How far a progress line says its job is, in (0, 1]; None when it says no number
    that reads as a fraction (the last `N/M` or `P%` in the line counts)."""
    if not line:
        return None
    found = None
    for m in _FRACTION.finditer(line):
        found = m
    if found is None:
        return None
    if found.group(3) is not None:
        fraction = float(found.group(3)) / 100
    else:
        done, total = float(found.group(1)), float(found.group(2))
        if total <= 0:
            return None
        fraction = done / total
    return fraction if 0 < fraction <= 1 else None


def typical_run(durations: Iterable[float]) -> float | None:
    """The median of finished runs' durations (None: none)."""
    runs = [d for d in durations if d >= 0]
    return statistics.median(runs) if runs else None


def clock(t: float, now: float) -> str:
    """A moment as the estimate names it: the local time, with the date when it is not
    within the next day."""
    fmt = "%H:%M" if abs(t - now) < 86400 else "%Y-%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(t))


def run_end(run: RunFacts, now: float) -> tuple[float | None, str]:
    """When a running job ends, and why then. Its time limit is a bound it cannot
    pass; its progress (end ≈ start + elapsed / fraction at the moment the line was
    seen), or else its command's typical run, may say it ends sooner. A prediction
    already in the past (the job runs on) is no prediction."""
    limits = [t for t in (run.timeout, run.max_runtime) if t is not None]
    hard = run.started_at + min(limits) if limits else None
    which = "timeout" if run.timeout is not None and (
        run.max_runtime is None or run.timeout <= run.max_runtime) else "--max-runtime"
    soft: tuple[float, str] | None = None
    fraction = progress_fraction(run.progress)
    if fraction is not None and run.progress_at is not None and run.progress_at > run.started_at:
        at = run.started_at + (run.progress_at - run.started_at) / fraction
        line = (run.progress or "").strip()
        soft = (at, f"job {run.job_id} finishes at its pace ({line!r} after "
                    f"{format_duration(run.progress_at - run.started_at)}) about {clock(at, now)}")
    elif run.typical is not None:
        at = run.started_at + run.typical
        runs = "1 run" if run.typical_of == 1 else f"median of {run.typical_of} runs"
        soft = (at, f"job {run.job_id} ends after its command's typical "
                    f"{format_duration(run.typical)} ({runs}) about {clock(at, now)}")
    if soft is not None and soft[0] >= now and (hard is None or soft[0] < hard):
        return soft
    if hard is not None:
        return hard, f"job {run.job_id}'s {which} ends at {clock(hard, now)}"
    return None, ""


def queued_run(time_limit: float | None, typical: float | None, typical_of: int) -> tuple[float | None, str]:
    """How long a waiting job runs once started: its typical run within its time
    limit, else its time limit."""
    if typical is not None and (time_limit is None or typical < time_limit):
        runs = "1 run" if typical_of == 1 else f"median of {typical_of} runs"
        return typical, f"its command's typical {format_duration(typical)} ({runs})"
    if time_limit is not None:
        return time_limit, f"its time limit {format_duration(time_limit)}"
    return None, ""


def estimate_starts(
    slots: Sequence[NodeSlot],
    holders: Sequence[Holder],
    queue: Sequence[Queued],
    *,
    now: float,
    headroom_mb: int,
    max_cpu_jobs: int,
    usage: Mapping[str, float] | None = None,
    wanted: Iterable[int] | None = None,
) -> dict[int, StartEstimate]:
    """The estimated start of each job of `queue` (those in `wanted`, when given: the
    play stops once they all have one). See the module docstring."""
    queue = list(queue)
    deep = {q.job.id for q in queue[MAX_QUEUE:]}
    queue = queue[:MAX_QUEUE]
    want = {q.job.id for q in queue} if wanted is None else set(wanted)
    by_name = {s.name: s for s in slots}
    runs = {q.job.id: q for q in queue}
    waiting = {q.job.id: q.job for q in queue}
    alike = _Alike(queue, slots, max_cpu_jobs)
    holding: dict[int, Holder] = {h.job_id: h for h in holders}
    ends = [(h.ends_at, h.job_id) for h in holders if h.ends_at is not None]
    heapq.heapify(ends)
    found: dict[int, StartEstimate] = {}
    t, because = now, "it fits: the next placement pass starts it"
    steps = 0
    # After the first step only the nodes where cards were freed can take a job that did
    # not fit a step before (nowhere else did anything grow), so only they are offered.
    offered = list(by_name)
    while True:
        result = place([by_name[n] for n in offered], alike.window(),
                       headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs, usage=usage)
        # "Could never fit" is judged against every node: only in the first step.
        for never in result.unschedulable if steps == 0 else ():
            # what no node could ever hold, no job alike could either
            for job in alike.drop_all(never.job_id):
                waiting.pop(job.id, None)
                found[job.id] = StartEstimate(None, f"no node could ever hold it: {never.reason}")
        alike.drop({p.job_id for p in result.placements})
        for placed in result.placements:
            job = waiting.pop(placed.job_id)
            found[job.id] = StartEstimate(t, because)
            by_name[placed.node] = preemption.deduct(by_name[placed.node], placed, job)
            q = runs[job.id]
            end = None if q.runs_for is None else t + q.runs_for
            said = "" if end is None else (
                f"job {job.id} (ahead of it) ends after {q.runs_because} at {clock(end, now)}")
            holding[job.id] = Holder(job_id=job.id, node=placed.node,
                                     cards={g: job.vram_mb for g in placed.gpus},
                                     memory_mb=job.memory_mb, ends_at=end, ends_because=said)
            if end is not None:
                heapq.heappush(ends, (end, job.id))
        if want <= found.keys() or not waiting or not ends or steps == MAX_STEPS:
            break
        steps += 1
        # The next moment some job ends: every job ending then frees its cards.
        t = ends[0][0]
        freed: list[Holder] = []
        while ends and ends[0][0] == t:
            freed.append(holding.pop(heapq.heappop(ends)[1]))
        because = "when " + "; ".join(h.ends_because for h in freed)
        for h in freed:
            if h.node in by_name:
                by_name[h.node] = preemption.free(by_name[h.node], [_leaving(h)])
        offered = sorted({h.node for h in freed if h.node in by_name})
    for job_id in want - found.keys():
        if job_id in deep:
            found[job_id] = StartEstimate(None, f"more than {MAX_QUEUE} jobs wait ahead of it")
        elif job_id in waiting and ends:  # the play stopped with ends still to come
            found[job_id] = StartEstimate(
                None, f"it cannot be known: more than {MAX_STEPS} jobs end before it could start")
        elif job_id in waiting:
            found[job_id] = StartEstimate(None, _unknown(holding.values()))
    return found


class _Alike:
    """The waiting jobs by shape (all they ask, less who and when), each in dispatch
    order, and how many of a shape one pass could ever place: each step hands `place`
    only that many of each, since the rest of a shape cannot start before them. A
    queue of 10,000 alike jobs then costs a step what a few hundred do."""

    def __init__(self, queue: Sequence[Queued], slots: Sequence[NodeSlot], max_cpu: int) -> None:
        self.shapes: dict[tuple[object, ...], list[PendingJob]] = {}
        self.shape_of: dict[int, tuple[object, ...]] = {}
        for q in queue:
            key = msgspec.structs.astuple(msgspec.structs.replace(q.job, id=0, created_at=0.0))
            self.shapes.setdefault(key, []).append(q.job)
            self.shape_of[q.job.id] = key
        cards = [g.total_mb for s in slots for g in s.gpus]
        self.bounds = {key: _most_placed(members[0], cards, max_cpu * len(slots))
                       for key, members in self.shapes.items()}

    def window(self) -> list[PendingJob]:
        return [j for key, members in self.shapes.items() for j in members[: self.bounds[key]]]

    def drop(self, ids: set[int]) -> None:
        for key in {self.shape_of[i] for i in ids}:
            members = self.shapes[key]
            self.shapes[key] = [j for j in members[: self.bounds[key]] if j.id not in ids] + \
                members[self.bounds[key] :]

    def drop_all(self, job_id: int) -> list[PendingJob]:
        return self.shapes.pop(self.shape_of[job_id], [])


def _most_placed(job: PendingJob, cards: Sequence[int], cpu_slots: int) -> int:
    """At most how many jobs like `job` one pass could place: a bound, not a count."""
    if job.gpus == 0 and job.gpu is None:
        return cpu_slots + 1
    if job.whole or job.quiet:
        return len(cards) // max(1, job.gpus) + 1
    if job.vram_mb > 0:
        return sum(total // job.vram_mb for total in cards) // max(1, job.gpus) + 1
    return 1 << 30  # reserving nothing and sharing cards: no bound


def _leaving(holder: Holder) -> preemption.Candidate:
    # What a stopping victim frees is what an ending job frees.
    return preemption.Candidate(job_id=holder.job_id, node=holder.node, user="", priority=0,
                                started_at=0.0, cards=holder.cards, memory_mb=holder.memory_mb)


def _unknown(left: Iterable[Holder]) -> str:
    endless = sorted(h.job_id for h in left if h.ends_at is None)
    if not endless:
        return "it cannot be known: no end of what keeps it waiting is known"
    shown = ", ".join(map(str, endless[:5])) + (", …" if len(endless) > 5 else "")
    jobs, have = ("job", "has") if len(endless) == 1 else ("jobs", "have")
    return (f"it cannot be known: running {jobs} {shown} {have} no time limit, progress "
            "or finished runs of their command to tell when they end")
