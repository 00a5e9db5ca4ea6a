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

An attempt counts in the window it ended in, a job in the window it ended in. The
store sums each row in SQL (`nvq.store.report`); this module puts the sums together.
"""

from __future__ import annotations

import msgspec

BY = ("user", "submitter", "tag", "node", "day")
OUTCOMES = ("completed", "failed", "timeout", "cancelled", "lost")
_FAILURES = ("failed", "timeout", "lost")
NO_TAG = "(none)"


class Sums(msgspec.Struct, frozen=True):
    """A row's attempts, summed (by the store, in SQL)."""

    key: str
    reserved_s: float  # whole cards × seconds from dispatch to end
    used_s: float  # card weight × seconds from start to end
    attempts: int
    preemptions: int


class Waits(msgspec.Struct, frozen=True):
    """A row's waits from submission to first dispatch: their mean and nearest-rank
    90th percentile."""

    key: str
    mean_s: float
    p90_s: float


class Ended(msgspec.Struct, frozen=True):
    """How many of a row's jobs ended in one state."""

    key: str
    state: str
    count: int


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


def p90_rank(n: int) -> int:
    """The nearest-rank 90th percentile's 1-based rank among `n` values: ceil(0.9 n)."""
    return (9 * n + 9) // 10


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile (of a non-empty list)."""
    return sorted(values)[p90_rank(len(values)) - 1]


def _row(key: str, sums: Sums | None, waits: Waits | None, ended: list[Ended]) -> ReportRow:
    row = ReportRow(key=key, jobs=dict.fromkeys(OUTCOMES, 0))
    if sums is not None:
        row.gpu_hours_reserved = sums.reserved_s / 3600
        row.gpu_hours_used = sums.used_s / 3600
        row.attempts = sums.attempts
        row.preemptions = sums.preemptions
    if waits is not None:
        row.wait_mean_s, row.wait_p90_s = waits.mean_s, waits.p90_s
    for e in ended:
        row.jobs[e.state] = row.jobs.get(e.state, 0) + e.count
    finished = sum(row.jobs.values())
    if finished:
        row.failure_rate = sum(row.jobs.get(k, 0) for k in _FAILURES) / finished
    return row


class Part(msgspec.Struct, frozen=True):
    """What the store summed for a window, by key (the total: key "total")."""

    sums: list[Sums]
    waits: list[Waits]
    ended: list[Ended]


def build(rows: Part, total: Part, *, by: str, since: float, until: float) -> UsageReport:
    """The report's rows (most GPU-hours used first; by day: in date order) and their
    total (summed apart, so a job with two tags counts once in it)."""
    if by not in BY:
        raise ValueError(f"--by {by!r}: expected one of {', '.join(BY)}")

    def rows_of(part: Part) -> list[ReportRow]:
        sums = {x.key: x for x in part.sums}
        waits = {x.key: x for x in part.waits}
        ended: dict[str, list[Ended]] = {}
        for e in part.ended:
            ended.setdefault(e.key, []).append(e)
        keys = sorted({*sums, *waits, *ended})
        return [_row(k, sums.get(k), waits.get(k), ended.get(k, [])) for k in keys]

    out = sorted(
        rows_of(rows),
        key=lambda r: (r.key if by == "day" else "", -r.gpu_hours_used, r.key),
    )
    summed = rows_of(total)
    whole = summed[0] if summed else _row("total", None, None, [])
    whole.key = "total"
    return UsageReport(since=since, until=until, by=by, rows=out, total=whole)
