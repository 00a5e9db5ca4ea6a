"""Answers longer than a frame: `nvq job ls --json --all` over a queue of `--jobs`
finished jobs (default 1,000,000, written with SQL as big_queue.py does), and `nvq job
cancel --array ID` of an `--array`-member array (default 100,000) waiting on a drained
node, each a fresh CLI process. Before answers could span frames, the first failed
past ~25,000 jobs of a real submit's size ("frame of … bytes is over the 67,108,864
limit") and the second exited 1 with everything cancelled.

Figures: wall seconds, the answer's size, the exit status, and the daemon's resident
memory (peak) after each. Prints one JSON line."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from typing import Any

from big_queue import daemon_pid, fill, rss_mb
from common import emit, machine, queue


def timed(nvq: Any, args: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "nvq", *args], env=nvq.env, stdout=out,
                              stderr=subprocess.PIPE, text=False)
        wall = time.perf_counter() - t
        size = out.tell()
    doc: dict[str, object] = {"s": round(wall, 1), "bytes": size, "exit": proc.returncode}
    if proc.returncode:
        doc["stderr"] = proc.stderr.decode(errors="replace")[-300:]
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--array", type=int, default=100_000)
    args = ap.parse_args()
    doc: dict[str, Any] = {"bench": "long_answers", "machine": machine()}
    if args.jobs:
        with queue("local") as nvq:
            nvq.ok("daemon", "stop")
            doc["fill_s"] = round(fill(nvq.home / "queue.db", args.jobs), 1)
            nvq.ok("queue", "status")
            doc["ls_all"] = {"jobs": args.jobs, **timed(nvq, ["job", "ls", "--json", "--all"])}
            doc["ls_all"]["daemon"] = rss_mb(daemon_pid(nvq.home))
    if args.array:
        with queue("local") as nvq:
            nvq.ok("queue", "drain", "local")
            t = time.perf_counter()
            nvq.ok("job", "submit", "--gpus", "0", "--array", f"1-{args.array}", "--", "true",
                   timeout=600)
            doc["array_submit_s"] = round(time.perf_counter() - t, 1)
            cancel = timed(nvq, ["job", "cancel", "--array", "1", "--json"])
            doc["cancel_array"] = {"members": args.array, **cancel,
                                   "daemon": rss_mb(daemon_pid(nvq.home))}
    emit(doc)


if __name__ == "__main__":
    main()
