"""A queue with a long history: 1,000,000 finished jobs (3 events each) in queue.db,
a few live ones, and a daemon on the local node serving them.

Figures: `nvq job show ID --json` and `nvq job ls --json` (the default window: live
jobs + the newest 50 finished) end to end, each a fresh CLI process; the same two
requests from a client already connected (the daemon's part: socket, handler,
store, reply); `queue status --json`; and the daemon's resident memory right after
it started on that store and after the reads, beside the same daemon on an empty
store (memory must not grow with history).

The history is written with SQL straight into queue.db (a template row doubled, then
renumbered), not by running jobs: about 30 s for a million. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import emit, machine, python_start, queue, summary_ms

from nvq import control as c
from nvq.client import Client
from nvq.domain.request import record_of
from nvq.model import Job, JobState
from nvq.store.jobs import JOB_COLUMNS, job_to_row


def fill(db: Path, n: int) -> float:
    """`n` finished jobs and 3n events, straight into an existing (migrated) queue.db."""
    started = time.monotonic()
    now = time.time()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    template = Job(
        id=1, name="train", state=JobState.COMPLETED, command="python train.py --seed 1",
        user="bench", submitter="bench", created_at=now, vram_mb=1024, attempt=1,
        node="local", gpus=[0], started_at=now, ended_at=now, exit_code=0,
        progress="epoch 10/10", note="a year of history", rank=1.0, tags=["sweep"],
        env={"PYTHONUNBUFFERED": "1"},
    )
    cols = JOB_COLUMNS.split(", ")
    rest = ", ".join(col for col in cols if col != "id")
    conn.execute("BEGIN")
    conn.execute(
        f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' for _ in cols)})",
        job_to_row(record_of(template)),
    )
    rows = 1
    while rows < n:
        conn.execute(f"INSERT INTO jobs ({rest}) SELECT {rest} FROM jobs LIMIT ?", (n - rows,))
        rows = conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
    t0 = now - n  # one a second, ending now
    conn.execute(
        "UPDATE jobs SET name = 'train-' || id, rank = id, created_at = ? + id,"
        " started_at = ? + id + 0.1, ended_at = ? + id + 0.6, nonce = lower(hex(randomblob(8))),"
        " command = 'python train.py --seed ' || id,"
        " user = CASE id % 10 WHEN 0 THEN 'alice' ELSE 'bench' END,"
        " state = CASE WHEN id % 97 = 0 THEN 'failed' WHEN id % 89 = 0 THEN 'cancelled'"
        " ELSE 'completed' END",
        (t0, t0, t0),
    )
    for kind, offset in (("job_submitted", 0.0), ("job_started", 0.1), ("job_completed", 0.6)):
        conn.execute(
            "INSERT INTO events (time, kind, job_id, node, data)"
            " SELECT created_at + ?, ?, id, 'local', '{}' FROM jobs",
            (offset, kind),
        )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


def rss_mb(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return {"rss_mb": out.get("VmRSS", 0.0), "peak_mb": out.get("VmHWM", 0.0)}


def cli(nvq: Any, args: list[str], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "nvq", *args], env=nvq.env,
                              capture_output=True)
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0, proc.stderr
    return summary_ms(times)


def in_process(home: Path, request: c.Request, runs: int) -> dict[str, float]:
    times = []
    with Client(home) as client:
        for _ in range(runs):
            t = time.perf_counter()
            client.request(request)
            times.append(time.perf_counter() - t)
    return summary_ms(times)


def daemon_pid(home: Path) -> int:
    return int((home / "daemon.pid").read_text().split()[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    doc: dict[str, Any] = {"bench": "big_queue", "machine": machine(), "jobs": args.jobs}
    with queue("local") as nvq:
        doc["daemon_empty"] = rss_mb(daemon_pid(nvq.home))
        nvq.ok("daemon", "stop")
        doc["fill_s"] = round(fill(nvq.home / "queue.db", args.jobs), 1)
        nvq.ok("queue", "status")  # a daemon starts on the filled store
        pid = daemon_pid(nvq.home)
        doc["daemon_started"] = rss_mb(pid)
        blocker = nvq.submit("--gpus", "0", "--", "sleep", "600")["id"]
        for _ in range(3):
            nvq.submit("--gpus", "0", "--after", str(blocker), "--", "true")
        mid = args.jobs // 2
        # what a bare interpreter start costs now: the floor under every CLI figure
        doc["python_start"] = python_start(args.runs)
        doc["job_show_cli"] = cli(nvq, ["job", "show", str(mid), "--json"], args.runs)
        doc["job_show_daemon"] = in_process(nvq.home, c.ShowJob(id=mid), args.runs * 5)
        doc["job_ls_cli"] = cli(nvq, ["job", "ls", "--json"], args.runs)
        doc["job_ls_daemon"] = in_process(nvq.home, c.JobWindow(), args.runs * 5)
        doc["job_ls_user_daemon"] = in_process(
            nvq.home, c.JobWindow(user="alice", states=["failed"]), args.runs
        )
        doc["queue_status_cli"] = cli(nvq, ["queue", "status", "--json"], max(3, args.runs // 4))
        doc["daemon_after_reads"] = rss_mb(pid)
        nvq.ok("job", "cancel", str(blocker))
    emit(doc)


if __name__ == "__main__":
    main()
