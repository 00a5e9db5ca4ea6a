"""The usage report's reads: the window's charged attempts and finished jobs, summed
per row in SQL (a million attempts never cross into Python one by one), on a
read-only connection of its own, so a report over a long history does not hold up
the daemon's writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nvq.domain.report import NO_TAG, Ended, Part, Sums, Waits
from nvq.model import FINISHED_STATES

# The row's key, per --by: over charges (c) and jobs (j, for tags), and over jobs alone.
_ATTEMPT_KEY = {
    "user": "c.user",
    "submitter": "c.submitter",
    "node": "COALESCE(c.node, '(no node)')",
    "day": "date(c.ended_at, 'unixepoch', 'localtime')",
    "tag": f"COALESCE(t.value, '{NO_TAG}')",
    "total": "'total'",
}
_JOB_KEY = {
    "user": "j.user",
    "submitter": "j.submitter",
    "node": "COALESCE(j.node, '(no node)')",
    "day": "date(j.ended_at, 'unixepoch', 'localtime')",
    "tag": f"COALESCE(t.value, '{NO_TAG}')",
    "total": "'total'",
}
_TAGS = " LEFT JOIN json_each(j.tags) t"
_STATES = ", ".join(f"'{s}'" for s in sorted(FINISHED_STATES))


def _part(conn: sqlite3.Connection, by: str, since: float, until: float) -> Part:
    key, tags = _ATTEMPT_KEY[by], _TAGS if by == "tag" else ""
    window = (since, until)
    joined = " LEFT JOIN jobs j ON j.id = c.job_id" + tags if tags else ""
    sums = [
        Sums(*row)
        for row in conn.execute(
            f"SELECT {key} AS k,"
            " SUM(c.cards * MAX(0, c.ended_at - COALESCE(c.dispatched_at, c.started_at))),"
            " SUM(c.weight * MAX(0, c.ended_at - c.started_at)),"
            " COUNT(*), SUM(c.outcome = 'preempted')"
            f" FROM charges c{joined} WHERE c.ended_at >= ? AND c.ended_at < ? GROUP BY k",
            window,
        )
    ]
    # Each job's first dispatch after its submission; the nearest-rank 90th percentile
    # (`report.p90_rank`) taken by a window function, so SQLite sorts the waits.
    waits = [
        Waits(*row)
        for row in conn.execute(
            f"WITH w AS MATERIALIZED (SELECT {key} AS k,"
            " MAX(0, c.dispatched_at - j.created_at) AS wait"
            f" FROM charges c JOIN jobs j ON j.id = c.job_id{tags}"
            " WHERE c.ended_at >= ? AND c.ended_at < ? AND c.attempt = 1"
            " AND c.dispatched_at IS NOT NULL),"
            " g AS (SELECT k, COUNT(*) AS size, AVG(wait) AS mean FROM w GROUP BY k),"
            " r AS (SELECT k, wait, ROW_NUMBER() OVER (PARTITION BY k ORDER BY wait) AS n"
            " FROM w)"
            " SELECT r.k, g.mean, r.wait FROM r JOIN g ON g.k = r.k"
            " WHERE r.n = (9 * g.size + 9) / 10",
            window,
        )
    ]
    ended = [
        Ended(*row)
        for row in conn.execute(
            # By end time, not by state: a window is a small part of a long history.
            f"SELECT {_JOB_KEY[by]} AS k, j.state, COUNT(*) FROM jobs j INDEXED BY jobs_by_end{tags}"
            f" WHERE j.ended_at >= ? AND j.ended_at < ? AND j.state IN ({_STATES})"
            " GROUP BY k, j.state",
            window,
        )
    ]
    return Part(sums=sums, waits=waits, ended=ended)


def read_window(db: Path, since: float, until: float, by: str) -> tuple[Part, Part]:
    """(the rows by `by`, the total) over [since, until)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        return _part(conn, by, since, until), _part(conn, "total", since, until)
    finally:
        conn.close()
