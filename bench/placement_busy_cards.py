"""What preferring quiet cards costs a placement pass, in process (the pure `place`):
10,000 pending one-card jobs of 100 sizes on 64 nodes × 8 cards with room for every
shape, with no card busy with foreign work (`quiet`: placed by memory alone, as
before), then with every second card at 95 % foreign utilisation (`half_busy`: every
node's choice and the node order look at utilisation). One JSON line per case:
the median and best of `--runs` passes, in ms.

    .venv/bin/python bench/placement_busy_cards.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import emit

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place

GiB = 1024


def cluster(busy: bool) -> list[NodeSlot]:
    return [
        NodeSlot(f"n{n:02d}", True, [
            GpuSlot(g, 80 * GiB, 2 * GiB, 0, foreign_util=95 if busy and g % 2 == 0 else 0)
            for g in range(8)
        ], 0, 0)
        for n in range(64)
    ]


def pending() -> list[PendingJob]:
    return [PendingJob(i, 0, float(i), 1, (1 + i % 100) * 256) for i in range(10_000)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    jobs = pending()
    for case, busy in (("quiet", False), ("half_busy", True)):
        nodes = cluster(busy)
        times = []
        placed = 0
        for _ in range(args.runs):
            start = time.perf_counter()
            result = place(nodes, jobs, headroom_mb=512, max_cpu_jobs=4)
            times.append((time.perf_counter() - start) * 1000)
            placed = len(result.placements)
        emit({"bench": "placement_busy_cards", "case": case, "pending": len(jobs),
              "nodes": 64, "cards": 8, "placed": placed,
              "median_ms": round(statistics.median(times), 1), "best_ms": round(min(times), 1)})


if __name__ == "__main__":
    main()
