"""What the jobs panel shows, without Textual: which jobs pass the filter, in what
order, and the text of each row. The panel keeps one of these and asks it, per batch of
changed jobs, which rows to add, update or drop, so 10,000 rows are never rebuilt for
one event."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from nvq.cli.render.jobs import job_where, runtime
from nvq.cli.render.table import clip
from nvq.model import Job, JobState
from nvq.units import format_mib

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
    detail = getattr(job, "reason_detail", None)  # sent by daemons that explain waits
    parts = [p for p in (job.reason, detail) if p]
    return ": ".join(parts)


def order_key(job: Job) -> tuple[int, float]:
    """Active jobs first, by id (the order they were queued); then finished jobs,
    the most recently ended first."""
    if job.state.finished:
        return (1, -(job.ended_at or job.created_at))
    return (0, float(job.id))


def row(job: Job) -> tuple[str, ...]:
    said = waiting_reason(job) if job.state in WAITING else (job.progress or job.reason or "")
    return (
        str(job.id),
        job.state.value,
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
    whether the order of the rows changed (then it sorts once)."""

    added: list[Job] = field(default_factory=list)
    updated: list[Job] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    reorder: bool = False


class JobsView:
    """Every job the panel knows (filtered or not), and the set it shows."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.shown: set[int] = set()
        self.filter = JobFilter()

    def load(self, jobs: Iterable[Job]) -> list[Job]:
        """The first full list: the rows to show, in order."""
        self.jobs = {j.id: j for j in jobs}
        self._trim()
        return self.visible()

    def visible(self) -> list[Job]:
        rows = sorted((j for j in self.jobs.values() if self.filter.matches(j)), key=order_key)
        self.shown = {j.id for j in rows}
        return rows

    def set_filter(self, text: str) -> list[Job]:
        self.filter = JobFilter.parse(text)
        return self.visible()

    def apply(self, jobs: Iterable[Job], gone: Iterable[int] = ()) -> Changes:
        """Fold changed jobs (and forgotten ids) in; say what the table must do."""
        out = Changes()
        for job in jobs:
            before = self.jobs.get(job.id)
            self.jobs[job.id] = job
            show = self.filter.matches(job)
            if job.id in self.shown and show:
                out.updated.append(job)
                if before is None or order_key(before) != order_key(job):
                    out.reorder = True
            elif show:
                self.shown.add(job.id)
                out.added.append(job)
                out.reorder = True
            elif job.id in self.shown:
                self.shown.discard(job.id)
                out.removed.append(job.id)
        for id in gone:
            self.jobs.pop(id, None)
            if id in self.shown:
                self.shown.discard(id)
                out.removed.append(id)
        for id in self._trim():
            if id in self.shown:
                self.shown.discard(id)
                out.removed.append(id)
        # a job both added and trimmed in one batch must not be added
        dropped = set(out.removed)
        out.added = [j for j in out.added if j.id not in dropped]
        out.updated = [j for j in out.updated if j.id not in dropped]
        return out

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
