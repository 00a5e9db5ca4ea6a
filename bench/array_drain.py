"""A big array with a `%2` limit on one sshd node with two cards: how fast it drains.
One `--array 1-N%2` request of `true` (N = `--members`, 100,000 by default), then the
completion rate over `--window` completions after the first `--warmup` (a full drain of
100,000 would take minutes even at the goal), read from `queue status` counts.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time

from common import emit, machine, queue, wait_nodes_up

TWO_CARDS = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\nname = "Bench card {i}"\nmemory = "8GiB"\n' for i in range(2)
)
ENDED = ("completed", "failed", "timeout", "cancelled", "lost")


def done(nvq: object) -> tuple[int, dict[str, int]]:
    counts: dict[str, int] = nvq.json("queue", "status")["counts"]  # type: ignore[attr-defined]
    return sum(counts[s] for s in ENDED), counts


def wait_done(nvq: object, target: int, timeout: float) -> tuple[int, float]:
    deadline = time.monotonic() + timeout
    while True:
        n, _ = done(nvq)
        if n >= target or time.monotonic() > deadline:
            return n, time.monotonic()
        time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=100_000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--window", type=int, default=2000)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    doc: dict[str, object] = {"bench": "array_drain", "machine": machine(), **vars(args)}
    with queue("ssh", nodes=1, gpus=TWO_CARDS) as nvq:
        wait_nodes_up(nvq)
        t0 = time.monotonic()
        nvq.ok("job", "submit", "--vram", "1GiB", "--array", f"1-{args.members}%2", "--", "true")
        doc["submit_s"] = round(time.monotonic() - t0, 2)
        start_n, start_t = wait_done(nvq, args.warmup, args.timeout)
        end_n, end_t = wait_done(nvq, start_n + args.window, args.timeout)
        doc["completed_in_window"] = end_n - start_n
        doc["jobs_per_s"] = round((end_n - start_n) / (end_t - start_t), 1)
        doc["placement"] = nvq.json("queue", "status").get("placement")
    emit(doc)


if __name__ == "__main__":
    main()
