"""The event stream for watchers (`nvq queue events --follow --json`), on one sshd node.

* `latency`: one follower, a fresh `nvq queue events --follow --json --kind end`
  process; `--runs` jobs one after another, each stamping bash's `$EPOCHREALTIME` as
  its last instruction. Per job: `exit_to_line` (that stamp → the end line read from
  the follower's stdout) and `event_to_line` (the event's time, when the daemon
  committed it → the line read). The job's runner, the SSH link, the daemon's commit,
  the fan-out, the CLI's decode and print are all in `exit_to_line`.
* `followers`: the daemon's CPU per job (utime + stime from /proc) over `--jobs` `true`
  jobs (one `--array` request, `--gpus 0`), with 0 and with `--followers` subscribers
  that ask what `queue events --follow --json` asks (every event, with detail),
  alternated `--rounds` times. The followers run in this process (one asyncio loop of
  `AsyncClient.subscribe`): the daemon's work per follower is the same as for a CLI
  process, without a hundred interpreters on the machine.

Prints one JSON line per figure."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import emit, machine, python_start, queue, summary_ms, wait_nodes_up

from nvq import control as c
from nvq.client.asynchronous import AsyncClient


def latency(nvq: Any, runs: int) -> dict[str, Any]:
    follower = subprocess.Popen(
        [sys.executable, "-m", "nvq", "queue", "events", "--follow", "--json", "--kind", "end",
         "--since", "-1"],
        env=nvq.env, cwd=nvq.cwd, stdout=subprocess.PIPE, text=True,
    )
    lines: dict[int, tuple[float, dict[str, Any]]] = {}
    arrived = threading.Condition()

    def read() -> None:
        assert follower.stdout is not None
        for raw in follower.stdout:
            at = time.time()
            doc = json.loads(raw)
            with arrived:
                lines[doc["job_id"]] = (at, doc)
                arrived.notify_all()

    threading.Thread(target=read, daemon=True).start()
    stamps = Path(nvq.home.parent / "stamps")
    stamps.mkdir(exist_ok=True)
    exit_to_line, event_to_line = [], []
    try:
        for i in range(runs + 1):  # the first is a warm-up (the follower subscribing)
            stamp = stamps / str(i)
            job = nvq.submit("--gpus", "0", "--", "bash", "-c",
                             f"printf %s \"$EPOCHREALTIME\" > {stamp}")["id"]
            with arrived:
                if not arrived.wait_for(lambda: job in lines, timeout=120):  # noqa: B023
                    raise RuntimeError(f"no end line for job {job}")
            at, doc = lines[job]
            if i == 0:
                continue
            exit_to_line.append(at - float(stamp.read_text()))
            event_to_line.append(at - doc["time"])
    finally:
        follower.kill()
        follower.wait()
    return {"exit_to_line": summary_ms(exit_to_line) | p95(exit_to_line),
            "event_to_line": summary_ms(event_to_line) | p95(event_to_line)}


def p95(values: list[float]) -> dict[str, float]:
    from common import percentile

    return {"p95_ms": round(percentile([v * 1000 for v in values], 0.95), 2)}


def daemon_cpu_ms(home: Path) -> float:
    pid = int((home / "daemon.pid").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def follow(home: str, count: list[int], detail: bool) -> None:
    """What `queue events --follow --json` asks for (`detail`; else what the TUI and
    the web page ask), read until cancelled."""
    async for _ in AsyncClient(home).subscribe(-1, follow=c.Subscribe(detail=detail)):
        count[0] += 1


def one_batch(nvq: Any, jobs: int) -> float:
    """The daemon's CPU ms per job over one `--array` of `true` jobs, run to the end."""
    before = daemon_cpu_ms(nvq.home)
    array = nvq.submit("--gpus", "0", "--array", f"0-{jobs - 1}", "--", "true")["id"]
    r = nvq.run("job", "wait", "--array", str(array), "--timeout", "600", timeout=700)
    assert r.code == 0, r
    return (daemon_cpu_ms(nvq.home) - before) / jobs


def with_followers(
    nvq: Any, jobs: int, followers: int, detail: bool = True
) -> tuple[float, int]:
    """`one_batch` while `followers` subscribers read; and the events they all read."""
    result: dict[str, Any] = {}

    async def run() -> None:
        count = [0]
        tasks = [asyncio.ensure_future(follow(str(nvq.home), count, detail)) for _ in range(followers)]
        await asyncio.sleep(2)  # the subscriptions reach the daemon (no figure waits on it)
        result["ms"] = await asyncio.to_thread(one_batch, nvq, jobs)
        await asyncio.sleep(2)  # the last lines reach the followers
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        result["read"] = count[0]

    asyncio.run(run())
    return result["ms"], result["read"]


def followers_cost(nvq: Any, jobs: int, followers: int, rounds: int) -> dict[str, Any]:
    alone, crowded, plain, read = [], [], [], []
    one_batch(nvq, 10)  # warm-up: the node's runner and the array path
    for _ in range(rounds):
        alone.append(one_batch(nvq, jobs))
        ms, seen = with_followers(nvq, jobs, followers)
        crowded.append(ms)
        read.append(seen)
        plain.append(with_followers(nvq, jobs, followers, detail=False)[0])
    a, b = sorted(alone)[len(alone) // 2], sorted(crowded)[len(crowded) // 2]
    return {
        "daemon_cpu_ms_per_job_0_followers": [round(x, 2) for x in alone],
        f"daemon_cpu_ms_per_job_{followers}_followers": [round(x, 2) for x in crowded],
        f"daemon_cpu_ms_per_job_{followers}_plain_subscribers": [round(x, 2) for x in plain],
        "events_read_by_followers": read,
        "extra_ms_per_job_per_follower": round((b - a) / followers, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", nargs="?", choices=["latency", "followers", "both"], default="both")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--followers", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with queue("ssh", sample_interval=2.0) as nvq:
        wait_nodes_up(nvq)
        if args.what in ("latency", "both"):
            doc: dict[str, Any] = {"bench": "event_stream_latency", "machine": machine(),
                                   "runs": args.runs}
            doc |= latency(nvq, args.runs)
            doc["python_start"] = python_start(5)
            emit(doc)
        if args.what in ("followers", "both"):
            doc = {"bench": "event_stream_followers", "machine": machine(), "jobs": args.jobs,
                   "followers": args.followers}
            doc |= followers_cost(nvq, args.jobs, args.followers, args.rounds)
            doc["python_start"] = python_start(5)
            emit(doc)


if __name__ == "__main__":
    main()
