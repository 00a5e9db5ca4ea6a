"""What playing the queue forward for estimated starts costs the daemon, in process (the
pure `estimate_starts`, which `job why` and `job ls` run at most once per placement
pass): 64 nodes × 8 cards of 80 GiB, each held by one running job that ends at one of
97 moments (its timeout), and `--pending` jobs of 60 GiB waiting, each with a time
limit, every one asked for (`job ls` over the whole queue). One JSON line per queue
length: the median and best of `--runs` plays, in ms, and how many got a time.

    .venv/bin/python bench/start_estimate.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import emit

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob
from nvq.domain.start_estimate import Holder, Queued, estimate_starts

GiB = 1024
NOW = 1_000_000.0


def cluster() -> tuple[list[NodeSlot], list[Holder]]:
    slots = [NodeSlot(f"n{n:02d}", True, [GpuSlot(g, 80 * GiB, 0, 40 * GiB, queue_jobs=1)
                                           for g in range(8)], 0, 8) for n in range(64)]
    holders = [Holder(job_id=n * 8 + g + 1, node=f"n{n:02d}", cards={g: 40 * GiB},
                      ends_at=NOW + 60 * ((n * 8 + g) % 97 + 1), ends_because="its timeout")
               for n in range(64) for g in range(8)]
    return slots, holders


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pending", type=int, nargs="*", default=[100, 1000, 10_000])
    args = parser.parse_args()
    slots, holders = cluster()
    for count in args.pending:
        queue = [Queued(job=PendingJob(10_000 + k, 0, float(k), 1, 60 * GiB), runs_for=600.0,
                        runs_because="its time limit") for k in range(count)]
        times, known = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            found = estimate_starts(slots, holders, queue, now=NOW, headroom_mb=512,
                                    max_cpu_jobs=4)
            times.append((time.perf_counter() - start) * 1000)
            known = sum(1 for e in found.values() if e.at is not None)
        emit({"bench": "start_estimate", "pending": count, "nodes": 64, "cards": 8,
              "with_a_time": known, "median_ms": round(statistics.median(times), 1),
              "best_ms": round(min(times), 1)})


if __name__ == "__main__":
    main()
