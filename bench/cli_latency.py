"""CLI latency: wall time of `nvq job show ID --json`, `nvq job ls --json`,
`nvq queue status --json` with 100, 10,000 and 100,000 jobs in the database, and of
`nvq --help`. Each command is a fresh process, as a user or a script runs it.

The database is filled directly through the store (finished jobs, as a queue that
has run for months holds), then a daemon serves it on the local node.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import emit, machine, queue

from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState, Tx
from nvq.store import Store


async def fill(db: Path, n: int) -> None:
    store = await Store.open(db)
    now = time.time()
    try:
        batch: list[JobRecord] = []
        for i in range(n):
            batch.append(
                record_of(Job(
                    id=0, name=f"train-{i}", state=JobState.COMPLETED,
                    command=f"python train.py --seed {i}", user="bench", submitter="bench",
                    created_at=now - n + i, vram_mb=1024, attempt=1, node="local", gpus=[0],
                    started_at=now - n + i, ended_at=now - n + i + 0.5, exit_code=0,
                    progress="epoch 10/10", note="a month of history",
                ))
            )
            if len(batch) == 10_000:
                await store.commit(Tx(new_jobs=batch))
                batch = []
        if batch:
            await store.commit(Tx(new_jobs=batch))
    finally:
        await store.close()


def timed(nvq: object, args: list[str], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "nvq", *args], env=nvq.env,  # type: ignore[attr-defined]
                              capture_output=True)
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0, proc.stderr
    ms = sorted(x * 1000 for x in times)
    return {"p50_ms": round(statistics.median(ms), 1), "max_ms": round(ms[-1], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,10000,100000")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    doc: dict[str, object] = {"bench": "cli_latency", "machine": machine()}
    for size in (int(s) for s in args.sizes.split(",")):
        with queue("local") as nvq:
            nvq.ok("daemon", "stop")
            asyncio.run(fill(nvq.home / "queue.db", size))
            nvq.ok("queue", "status")  # a daemon serves the filled database
            mid = str(size // 2)
            doc[f"jobs_{size}"] = {
                "job_show": timed(nvq, ["job", "show", mid, "--json"], args.runs),
                "job_ls": timed(nvq, ["job", "ls", "--json"], max(3, args.runs // 3)),
                "queue_status": timed(nvq, ["queue", "status", "--json"], args.runs),
            }
            if "help" not in doc:
                doc["help"] = timed(nvq, ["--help"], args.runs)
    emit(doc)


if __name__ == "__main__":
    main()
