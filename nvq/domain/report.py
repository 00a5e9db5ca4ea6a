"""The usage report (`nvq report`): who used what, from the attempts the queue charged
and the jobs that ended in a window. Pure.

Per row (a user, a submitter label, a tag, a node or a day):

* GPU-hours **reserved**: whole cards × the time from an attempt's dispatch to its
  end — what the queue held for it;
* GPU-hours **used**: what fair share counts — each card weighted by the part of it
  the job reserved (`--vram` / card memory; whole cards without `--vram`), from the
  attempt's start to its end;
* jobs by how they ended, the failure rate (failed, timed out or lost, of those that
  ended), preemptions (attempts stopped to make room, or for their time on a borrowed
  node), and the mean and 90th percentile of the wait from submission to the first
  dispatch.

An attempt counts in the window it ended in, a job in the window it ended in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import msgspec

BY = ("user", "submitter", "tag", "node", "day")
OUTCOMES = ("completed", "failed", "timeout", "cancelled", "lost")
_FAILURES = ("failed", "timeout", "lost")
NO_TAG = "(none)"


class AttemptRow(msgspec.Struct, frozen=True, kw_only=True):
    job_id: int
    attempt: int
    user: str
    submitter: str
    node: str | None
    started_at: float
    ended_at: float
    weight: float
    cards: int
    dispatched_at: float | None
    outcome: str
    created_at: float | None  # the job's submission (None: the job was purged)
    tags: list[str] = []


class EndedJob(msgspec.Struct, frozen=True, kw_only=True):
    user: str
    submitter: str
    node: str | None
    state: str
    ended_at: float
    tags: list[str] = []


class ReportRow(msgspec.Struct, kw_only=True):
    key: str
    gpu_hours_reserved: float = 0.0
    gpu_hours_used: float = 0.0
    attempts: int = 0
    jobs: dict[str, int] = {}  # how the jobs that ended did: completed, failed, ...
    failure_rate: float | None = None  # of the jobs that ended; None: none ended
    preemptions: int = 0
    wait_mean_s: float | None = None  # submission → first dispatch
    wait_p90_s: float | None = None


class UsageReport(msgspec.Struct, kw_only=True):
    since: float
    until: float
    by: str
    rows: list[ReportRow]
    total: ReportRow


def _day(t: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(t))


def _keys(
    by: str, user: str, submitter: str, node: str | None, tags: list[str], t: float
) -> list[str]:
    if by == "user":
        return [user]
    if by == "submitter":
        return [submitter or user]
    if by == "node":
        return [node or "(no node)"]
    if by == "day":
        return [_day(t)]
    return list(dict.fromkeys(tags)) or [NO_TAG]


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile (of a non-empty list)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


class _Acc:
    __slots__ = ("jobs", "row", "waits")

    def __init__(self, key: str) -> None:
        self.row = ReportRow(key=key, jobs=dict.fromkeys(OUTCOMES, 0))
        self.waits: list[float] = []
        self.jobs = 0

    def attempt(self, a: AttemptRow) -> None:
        row = self.row
        row.attempts += 1
        held_from = a.dispatched_at if a.dispatched_at is not None else a.started_at
        row.gpu_hours_reserved += a.cards * max(0.0, a.ended_at - held_from) / 3600
        row.gpu_hours_used += a.weight * max(0.0, a.ended_at - a.started_at) / 3600
        if a.outcome == "preempted":
            row.preemptions += 1
        if a.attempt == 1 and a.created_at is not None and a.dispatched_at is not None:
            self.waits.append(max(0.0, a.dispatched_at - a.created_at))

    def ended(self, j: EndedJob) -> None:
        self.row.jobs[j.state] = self.row.jobs.get(j.state, 0) + 1
        self.jobs += 1

    def done(self) -> ReportRow:
        row = self.row
        if self.jobs:
            failed = sum(row.jobs.get(k, 0) for k in _FAILURES)
            row.failure_rate = failed / self.jobs
        if self.waits:
            row.wait_mean_s = sum(self.waits) / len(self.waits)
            row.wait_p90_s = p90(self.waits)
        return row


def build(
    attempts: Iterable[AttemptRow], jobs: Iterable[EndedJob], *, by: str, since: float, until: float
) -> UsageReport:
    """The report's rows (sorted by GPU-hours used, most first) and their total."""
    if by not in BY:
        raise ValueError(f"--by {by!r}: expected one of {', '.join(BY)}")
    accs: dict[str, _Acc] = {}
    total = _Acc("total")

    def acc(key: str) -> _Acc:
        found = accs.get(key)
        if found is None:
            found = accs[key] = _Acc(key)
        return found

    for a in attempts:
        total.attempt(a)
        for key in _keys(by, a.user, a.submitter, a.node, a.tags, a.ended_at):
            acc(key).attempt(a)
    for j in jobs:
        total.ended(j)
        for key in _keys(by, j.user, j.submitter, j.node, j.tags, j.ended_at):
            acc(key).ended(j)
    rows = sorted(
        (a.done() for a in accs.values()),
        key=lambda r: (r.key if by == "day" else "", -r.gpu_hours_used, r.key),
    )
    return UsageReport(since=since, until=until, by=by, rows=rows, total=total.done())
