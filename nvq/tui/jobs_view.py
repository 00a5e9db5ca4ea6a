"""What the jobs panel shows, without Textual: which jobs pass the filter, in what
order, and the text of each row. The panel keeps one of these and asks it, per batch of
changed jobs, which rows to add, update or drop, so 10,000 rows are never rebuilt for
one event."""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nvq.cli.render.jobs import job_where, runtime, state_label, unreachable_state
from nvq.cli.render.table import clip
from nvq.model import Job, JobState
from nvq.values import format_mib

COLUMNS = ("ID", "STATE", "USER", "NAME", "WHERE", "VRAM", "RUNTIME", "REASON / PROGRESS")
WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})
RECENT_KEPT = 1000  # finished jobs the panel holds; older ones are for `job ls --all`


@dataclass(frozen=True)
class JobFilter:
    """`state:running user:ana tag:sweep some words`: every part must match."""

    states: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    words: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> JobFilter:
        try:
            parts = shlex.split(text)
        except ValueError:  # an unclosed quote while typing: take the words as they are
            parts = text.split()
        states: set[str] = set()
        users: set[str] = set()
        tags: set[str] = set()
        words: list[str] = []
        for part in parts:
            key, sep, value = part.partition(":")
            if sep and value and key in ("state", "user", "tag"):
                {"state": states, "user": users, "tag": tags}[key].update(value.split(","))
            else:
                words.append(part.lower())
        return cls(frozenset(states), frozenset(users), frozenset(tags), tuple(words))

    def matches(self, job: Job) -> bool:
        if self.states and job.state.value not in self.states:
            return False
        if self.users and job.user not in self.users and job.submitter not in self.users:
            return False
        if self.tags and not self.tags.intersection(job.tags):
            return False
        if self.words:
            hay = " ".join([str(job.id), job.name, job.command, job.note, *job.tags]).lower()
            return all(w in hay for w in self.words)
        return True


def waiting_reason(job: Job) -> str:
    """Why a waiting job waits, in one line: the placement pass's reason and its detail
    where the daemon gives one."""
    detail = getattr(job, "reason_detail", None)  # JobRow and JobDetail carry it
    parts = [p for p in (job.reason, detail) if isinstance(p, str) and p]
    return ": ".join(parts)


def order_key(job: Job) -> tuple[int, float]:
    """Active jobs first, by id (the order they were queued); then finished jobs,
    the most recently ended first."""
    if job.state.finished:
        return (1, -(job.ended_at or job.created_at))
    return (0, float(job.id))


def away_at(job: Job, away: Mapping[str, float]) -> float | None:
    """When a running job on a node out of reach may run elsewhere; None: in reach."""
    return away.get(job.node) if job.state is JobState.RUNNING and job.node else None


def state_cell(job: Job, away: Mapping[str, float], now: float | None = None) -> str:
    """`running`, or `unreachable, reassign in 40s` while its node is out of reach (a
    view: the job stays running), counted as `job show` counts."""
    at = away_at(job, away)
    return state_label(job) if at is None else unreachable_state(at, job.no_reassign, now)


def row(
    job: Job, away: Mapping[str, float] | None = None, now: float | None = None
) -> tuple[str, ...]:
    """`away`: node out of reach → its reassign moment (`job ls --json`'s `unreachable`)."""
    said = waiting_reason(job) if job.state in WAITING else (job.progress or job.reason or "")
    return (
        str(job.id),
        state_cell(job, away or {}, now),
        clip(job.submitter or job.user, 12),
        clip(job.name, 24),
        job_where(job),
        format_mib(job.vram_mb) if job.vram_mb else "-",
        runtime(job),
        clip(said, 60),
    )


@dataclass
class Changes:
    """What the table must do for one batch: rows to add, to redraw, to remove, and
    whether rows moved (then the table takes the view's `order` once)."""

    added: list[Job] = field(default_factory=list)
    updated: list[Job] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    reorder: bool = False
    moved_from: int = 0  # with reorder: rows before this position kept their place


class JobsView:
    """Every job the panel knows (filtered or not), and the set it shows."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.away: dict[str, float] = {}  # node out of reach → when its jobs may move
        self.shown: set[int] = set()
        self.filter = JobFilter()
        # the shown jobs as (order_key, id), kept sorted: a change moves one entry
        self.order: list[tuple[tuple[int, float], int]] = []
        self._keys: dict[int, tuple[int, float]] = {}

    def load(self, jobs: Iterable[Job]) -> list[Job]:
        """The first full list: the rows to show, in order."""
        self.jobs = {j.id: j for j in jobs}
        self._trim()
        return self.visible()

    def visible(self) -> list[Job]:
        rows = sorted((j for j in self.jobs.values() if self.filter.matches(j)), key=order_key)
        self.shown = {j.id for j in rows}
        self._keys = {j.id: order_key(j) for j in rows}
        self.order = sorted((k, id) for id, k in self._keys.items())
        return rows

    def order_ids(self) -> list[int]:
        return [id for _, id in self.order]

    def _place(self, job: Job) -> int:
        """Put a shown job in the order; its position."""
        key = self._keys[job.id] = order_key(job)
        i = bisect.bisect_left(self.order, (key, job.id))
        self.order.insert(i, (key, job.id))
        return i

    def _unplace(self, id: int) -> int:
        """Take a job out of the order; where it was (the end when it was not there)."""
        key = self._keys.pop(id, None)
        if key is not None:
            i = bisect.bisect_left(self.order, (key, id))
            if i < len(self.order) and self.order[i] == (key, id):
                del self.order[i]
                return i
        return len(self.order)

    def set_filter(self, text: str) -> list[Job]:
        self.filter = JobFilter.parse(text)
        return self.visible()

    def apply(self, jobs: list[Job], gone: Iterable[int] = ()) -> Changes:
        """Fold changed jobs (and forgotten ids) in; say what the table must do."""
        out = Changes()
        moved = len(self.order) + len(jobs)  # the first position whose row changed
        for job in jobs:
            before = self.jobs.get(job.id)
            self.jobs[job.id] = job
            show = self.filter.matches(job)
            if job.id in self.shown and show:
                out.updated.append(job)
                if before is None or order_key(before) != order_key(job):
                    moved = min(moved, self._unplace(job.id), self._place(job))
            elif show:
                self.shown.add(job.id)
                out.added.append(job)
                moved = min(moved, self._place(job))
            elif job.id in self.shown:
                self._hide(job.id, out)
        for id in gone:
            self.jobs.pop(id, None)
            if id in self.shown:
                self._hide(id, out)
        if any(j.state.finished for j in jobs):
            for id in self._trim():
                if id in self.shown:
                    self._hide(id, out)
        # a row appended after every other one needs no other row moved
        out.reorder = moved < len(self.order) - len(out.added) or bool(out.removed)
        out.moved_from = 0 if out.removed else moved
        # a job both added and trimmed in one batch must not be added
        dropped = set(out.removed)
        # in order: when nothing else moved they are appended as they come
        out.added = sorted((j for j in out.added if j.id not in dropped), key=order_key)
        out.updated = [j for j in out.updated if j.id not in dropped]
        return out

    def _hide(self, id: int, out: Changes) -> None:
        self.shown.discard(id)
        self._unplace(id)
        out.removed.append(id)

    def _trim(self) -> list[int]:
        """Forget the oldest finished jobs beyond RECENT_KEPT."""
        finished = [j for j in self.jobs.values() if j.state.finished]
        if len(finished) <= RECENT_KEPT:
            return []
        finished.sort(key=order_key)
        old = [j.id for j in finished[RECENT_KEPT:]]
        for id in old:
            del self.jobs[id]
        return old
