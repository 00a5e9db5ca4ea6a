"""`nvq report` over a long history: 1,000,000 finished jobs (one a second, ending
now, so about 11.6 days), each with its charged attempt, written with SQL as
`big_queue.py` writes them.

Figures: the report over the last 7 days (about 605,000 jobs) and over everything,
by user and by tag, end to end as a fresh CLI process (`report_*_cli`), and the
daemon's part from a connected client (`report_*_daemon`: the read on its own
connection, the aggregation, the reply). Prints one JSON line.

    cd bench && ../.venv/bin/python report.py
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path
from typing import Any

from big_queue import cli, fill, in_process
from common import emit, machine, queue

from nvq import control as c

DAY = 86400.0


def charge_all(db: Path) -> float:
    """One charged attempt per job: a whole card from dispatch (50 ms before its start)
    to its end, ending as the job did."""
    started = time.monotonic()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(
        "INSERT INTO charges (job_id, attempt, user, submitter, node, started_at, ended_at,"
        " weight, cards, dispatched_at, outcome)"
        " SELECT id, 1, user, submitter, node, started_at, ended_at, 1.0, 1,"
        " started_at - 0.05, state FROM jobs"
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    doc: dict[str, Any] = {"bench": "report", "machine": machine(), "jobs": args.jobs}
    with queue("local") as nvq:
        nvq.ok("daemon", "stop")
        db = nvq.home / "queue.db"
        doc["fill_s"] = round(fill(db, args.jobs) + charge_all(db), 1)
        nvq.ok("queue", "status")  # a daemon starts on the filled store
        now = time.time()
        for span, since in (("7d", now - 7 * DAY), ("all", 0.0)):
            for by in ("user", "tag"):
                request = c.Report(since=since, until=now + 60, by=by)
                doc[f"report_{span}_{by}_daemon"] = in_process(nvq.home, request, args.runs)
            flag = "7d" if span == "7d" else "100d"
            doc[f"report_{span}_user_cli"] = cli(
                nvq, ["report", "--since", flag, "--json"], args.runs
            )
        rows = nvq.json("report", "--since", "100d", timeout=600)
        doc["total_jobs_seen"] = sum(rows["total"]["jobs"].values())
    emit(doc)


if __name__ == "__main__":
    main()
