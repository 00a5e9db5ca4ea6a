"""What each page shows, as plain data for the templates: which jobs, in which order,
with which buttons. No I/O here, so the rules (the 30-day window, the cap, the
filters, who may press what) are tested without a browser."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nvq.control import GpuPoint
from nvq.domain.report import ReportRow
from nvq.model import FINISHED_STATES, Job, JobState

COMPLETED_WINDOW = 30 * 86400.0  # completed jobs older than this are left to `job ls --all`
COMPLETED_CAP = 100
# How many finished jobs (newest ids first) are read to find the window's newest 100:
# a job that ended long after it was submitted still lands among them.
COMPLETED_SCAN = 1000

ACTIONS: dict[str, frozenset[JobState]] = {
    "release": frozenset({JobState.HELD}),
    "pause": frozenset({JobState.PENDING, JobState.HELD, JobState.RUNNING}),
    "resume": frozenset({JobState.PAUSED}),
    "cancel": frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED, JobState.RUNNING}),
    "requeue": frozenset(FINISHED_STATES),
}
# Finished jobs that ended badly: their own section, with the reason.
ENDED_BADLY = frozenset(FINISHED_STATES - {JobState.COMPLETED})


def confirmation(action: str, job: Job) -> str:
    """What the browser asks before the button acts ("" for none): everything that
    stops work or runs it again is asked; resuming and pausing a waiting job are not."""
    if action == "pause" and job.state is JobState.RUNNING:
        return f"Pause job {job.id}? It is stopped now and starts again when resumed."
    if action == "cancel":
        return f"Cancel job {job.id}" + ("? It is stopped now." if job.state is
                                        JobState.RUNNING else "?")
    if action == "requeue":
        return f"Run job {job.id} again (it ended {job.state.value})?"
    if action == "release":
        return f"Release job {job.id}? It runs although a prerequisite did not complete."
    return ""


@dataclass(frozen=True)
class Filters:
    state: str = ""
    user: str = ""
    tag: str = ""

    def keep(self, job: Job) -> bool:
        return (
            (not self.state or job.state == self.state)
            and (not self.user or self.user in (job.user, job.submitter))
            and (not self.tag or self.tag in job.tags)
        )


@dataclass(frozen=True)
class Visitor:
    """The user the page acts as, and the queue's admins: who may press which button."""

    user: str
    admins: frozenset[str] = frozenset()

    def may_manage(self, job: Job) -> bool:
        return job.user == self.user or self.user in self.admins

    def actions(self, job: Job) -> list[tuple[str, str]]:
        """(action, confirmation) for each button this visitor may press on `job`."""
        if not self.may_manage(job):
            return []
        return [(name, confirmation(name, job)) for name, states in ACTIONS.items()
                if job.state in states]


@dataclass
class JobRow:
    job: Job
    where: str
    runtime: str
    actions: list[tuple[str, str]] = field(default_factory=list)


def where(job: Job) -> str:
    # a waiting job's node is where an earlier attempt ran, not where it is
    if job.node is None or job.state in (JobState.PENDING, JobState.HELD, JobState.PAUSED):
        return ""
    return f"{job.node}:{','.join(map(str, job.gpus))}" if job.gpus else job.node


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return ""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def runtime(job: Job, now: float) -> str:
    if job.started_at is None or job.state in ("pending", "held", "paused"):
        return ""  # back in the queue: its old attempt's clock has stopped
    end = job.ended_at if job.ended_at is not None else now
    return duration(end - job.started_at)


def clock(at: float | None) -> str:
    return "" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def row(job: Job, visitor: Visitor, now: float) -> JobRow:
    return JobRow(job, where(job), runtime(job, now), visitor.actions(job))


def active_rows(
    jobs: Iterable[Job], filters: Filters, visitor: Visitor, now: float
) -> list[JobRow]:
    """Running first, then the waiting ones, each by id."""
    kept = [j for j in jobs if not j.state.finished and filters.keep(j)]
    kept.sort(key=lambda j: (j.state is not JobState.RUNNING, j.id))
    return [row(j, visitor, now) for j in kept]


def completed_rows(
    jobs: Sequence[Job], filters: Filters, visitor: Visitor, now: float,
    states: frozenset[JobState] = FINISHED_STATES,
) -> list[JobRow]:
    """Finished jobs (in `states`) that ended within the window, newest first, at most
    the cap."""
    since = now - COMPLETED_WINDOW
    kept = [
        j
        for j in jobs
        if j.state in states and (j.ended_at or j.created_at) >= since and filters.keep(j)
    ]
    kept.sort(key=lambda j: (j.ended_at or j.created_at, j.id), reverse=True)
    return [row(j, visitor, now) for j in kept[:COMPLETED_CAP]]


@dataclass(frozen=True)
class GpuBar:
    """One card's memory as four shares of 100 (foreign, queue, reserved, free)."""

    foreign: float
    queue: float
    reserved: float
    free: float


def gpu_bar(total_mb: int, foreign_mb: int, queue_mb: int, reserved_mb: int) -> GpuBar:
    if total_mb <= 0:
        return GpuBar(0, 0, 0, 100)
    parts = [max(0, foreign_mb), max(0, queue_mb), max(0, reserved_mb - queue_mb)]
    used = sum(parts)
    scale = 100.0 / max(total_mb, used)
    f, q, r = (round(p * scale, 1) for p in parts)
    return GpuBar(f, q, r, round(max(0.0, 100.0 - f - q - r), 1))


def size(n: int | None) -> str:
    """Bytes as people read them: `512 B`, `1.5 KiB`, `3.2 GiB`."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return ""  # not reached


def attempt_runtimes(attempts: Sequence[Any], now: float) -> tuple[list[str], str]:
    """Each attempt's runtime (a running one's so far) and their total."""
    spans = [
        None if a.started_at is None else (a.ended_at if a.ended_at is not None else now)
        - a.started_at
        for a in attempts
    ]
    total = sum(s for s in spans if s is not None)
    return [duration(s) for s in spans], duration(total) if any(
        s is not None for s in spans) else ""


def gib(mb: int | None) -> str:
    return "" if mb is None else f"{mb / 1024:.1f} GiB"


CHART_W, CHART_H = 288, 40  # one pixel per 5 minutes of a day


@dataclass(frozen=True)
class Chart:
    """A card's last day as two SVG polylines: memory in use (not the queue's plus
    the queue's) and utilisation, each 0-100 % from bottom to top."""

    memory: str
    util: str
    points: int


def charts(
    points: Iterable[GpuPoint], now: float, span: float = 86400.0
) -> dict[tuple[str, int], Chart]:
    """`GpuPoint`s → a chart per (node, gpu)."""
    start = now - span
    mem: dict[tuple[str, int], list[str]] = {}
    util: dict[tuple[str, int], list[str]] = {}
    for p in points:
        if p.time < start:
            continue
        key = (p.node, p.gpu)
        x = round((p.time - start) / span * CHART_W, 1)
        used = (p.foreign_mb + p.queue_mb) / p.mem_total_mb * 100 if p.mem_total_mb else 0.0
        mem.setdefault(key, []).append(f"{x},{_y(used)}")
        if p.util_percent is not None:
            util.setdefault(key, []).append(f"{x},{_y(p.util_percent)}")
    return {k: Chart(_to_now(v), _to_now(util.get(k, [])), len(v)) for k, v in mem.items()}


# The Nodes page's windows, shortest first: (seconds, label, seconds per point).
CHART_SPANS = ((3600.0, "1 h", 60.0), (86400.0, "24 h", 300.0), (7 * 86400.0, "7 d", 2100.0))


def chart_span(oldest: float | None, now: float, slack: float = 0.0) -> tuple[float, str, float]:
    """The shortest window that holds all the history there is: a young queue's
    minutes of samples fill an hour's chart, not a sliver of a day's. `slack`: how
    much older than its first sample `oldest` may read (the start of its bucket)."""
    for span in CHART_SPANS:
        if oldest is not None and now - oldest <= span[0] + slack:
            return span
    return CHART_SPANS[-1] if oldest is not None else CHART_SPANS[0]


def _to_now(xy: list[str]) -> str:
    """The line carries its last value on to the right edge (now): a fresh card's
    single point still shows as a level."""
    if not xy:
        return ""
    return " ".join([*xy, f"{CHART_W},{xy[-1].split(',')[1]}"])


def _y(percent: float) -> float:
    return round(CHART_H - min(100.0, max(0.0, percent)) / 100 * CHART_H, 1)


# The Usage page: its periods, and each row's bar (GPU-hours used, as a share of the
# largest row's).
USAGE_SPANS = {"1d": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0}


def usage_bars(rows: Sequence[ReportRow]) -> dict[str, float]:
    """Each row's GPU-hours used as a share of the most any row reserved: a bar is as
    long as its use, and what shows as 0.00 GPU-h shows no bar."""
    most = max((max(r.gpu_hours_reserved, r.gpu_hours_used) for r in rows), default=0.0)
    return {
        r.key: round(100 * r.gpu_hours_used / most, 1)
        if most and round(r.gpu_hours_used, 2) > 0 else 0.0
        for r in rows
    }
