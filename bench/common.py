"""Shared set-up for benchmarks: the same harness the tests use (real daemon, real
runners, real sshd nodes on loopback, fake GPUs), torn down after the run."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cluster import Nvq, make_nvq, write_mesh_config  # noqa: E402
from tests.harness.sshd import start_sshd_nodes  # noqa: E402

ONE_CARD = 'cuda = "13.0"\n[[gpu]]\nname = "Bench card"\nmemory = "24GiB"\n'


@contextlib.contextmanager
def queue(kind: str, *, nodes: int = 1, gpus: str = ONE_CARD,
          sample_interval: float = 2.0) -> Iterator[Nvq]:
    """A queue on the local node (`kind="local"`) or on `nodes` sshd nodes."""
    tmp = Path(tempfile.mkdtemp(prefix=f"nvq-bench-{kind}-"))
    sshd: list[Any] = []
    nvq = make_nvq(tmp, gpus=gpus, sample_interval=sample_interval)
    try:
        if kind == "ssh":
            sshd = start_sshd_nodes(tmp / "sshd", nodes)
            # the default keepalive (the tests use a short one to notice faults fast)
            write_mesh_config(
                nvq, sshd, gpus=gpus, sample_interval=sample_interval, keepalive="5s"
            )
        nvq.ok("queue", "status")
        yield nvq
    finally:
        nvq.shutdown()
        for node in sshd:
            node.close()
        shutil.rmtree(tmp, ignore_errors=True)


def wait_nodes_up(nvq: Nvq, timeout: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = nvq.json("queue", "nodes")
        if nodes and all(n["state"] == "up" and n["gpus"] for n in nodes):
            return
        time.sleep(0.1)
    raise RuntimeError("nodes did not come up")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "min_ms": round(min(ms), 2),
        "max_ms": round(max(ms), 2),
    }


def emit(doc: dict[str, Any]) -> None:
    print(json.dumps(doc), flush=True)


def machine() -> dict[str, Any]:
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return {"cores": os.cpu_count(), "mem_gib": round(mem_kb / 1024 / 1024, 1)}


def cpu_busy_ms() -> float:
    """CPU time the whole machine spent busy so far (every core, every process), from
    /proc/stat: the difference over a run, divided by its jobs, is what one job cost,
    a figure that holds when the wall-clock rate is skewed by a noisy machine."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]  # idle + iowait
    busy = sum(ticks[:8]) - idle  # guest time is already inside user
    return busy * 1000 / os.sysconf("SC_CLK_TCK")


def python_start(runs: int = 10) -> dict[str, float]:
    """A bare `python -c pass`, timed: the floor under every CLI figure, and a gauge of
    how loaded the machine was while a bench ran."""
    import subprocess
    import time

    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return summary_ms(times)
