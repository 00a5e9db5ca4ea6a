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

# NVQ_BENCH_TREE: another checkout's harness and nvq (beside.py runs this file so)
ROOT = Path(os.environ.get("NVQ_BENCH_TREE") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

from tests.cluster import Nvq, make_nvq, write_mesh_config  # noqa: E402
from tests.harness.sshd import start_sshd_nodes  # noqa: E402

ONE_CARD = 'cuda = "13.0"\n[[gpu]]\nname = "Bench card"\nmemory = "24GiB"\n'


@contextlib.contextmanager
def queue(kind: str, *, nodes: int = 1, gpus: str = ONE_CARD,
          sample_interval: float = 2.0, local_node: bool = False) -> Iterator[Nvq]:
    """A queue on the local node (`kind="local"`) or on `nodes` sshd nodes (and the
    local node too with `local_node`)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"nvq-bench-{kind}-"))
    sshd: list[Any] = []
    nvq = make_nvq(tmp, gpus=gpus, sample_interval=sample_interval)
    # the tests' check of every reply is not what a user's daemon runs
    nvq.env.pop("NVQ_CHECK_REPLIES", None)
    try:
        if kind == "ssh":
            sshd = start_sshd_nodes(tmp / "sshd", nodes)
            # the default keepalive (the tests use a short one to notice faults fast)
            write_mesh_config(
                nvq, sshd, gpus=gpus, sample_interval=sample_interval, keepalive="5s",
                local_node=local_node,
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
        doc = nvq.json("queue", "nodes")
        nodes = doc["nodes"] if isinstance(doc, dict) else doc  # a list before 2026-12
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


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def _kind(cmd: str) -> str:
    if "nvq.daemon.main" in cmd:
        return "daemon"
    if "nvq_runner serve" in cmd:
        return "runner"
    if "nvq_runner attach" in cmd:
        return "runner_attach"
    if cmd.startswith("sshd:"):
        return "sshd"
    return "other"


def _cgroup_cpuacct() -> Path | None:
    """This process's own cpuacct cgroup (v1) when it is not the root one: run a bench
    inside one (`echo $$ > /sys/fs/cgroup/cpuacct/NAME/cgroup.procs`) and every process
    it starts, reparented or short-lived, is counted there, jobs included."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if "cpuacct" in ctrls.split(",") and path not in ("", "/"):
                return Path("/sys/fs/cgroup/cpuacct") / path.lstrip("/")
    except OSError:
        pass
    return None


def cpu_by_process(marker: str) -> dict[str, float]:
    """CPU time (user + system, ms) of the live processes whose command line holds
    `marker` (the queue's temporary directory), summed by kind: the daemon, the runners,
    the runners' `attach` relays, sshd. With `tree_ms`, the whole cgroup this process
    runs in (see `_cgroup_cpuacct`): what is left of it after the kinds above and this
    process is the jobs (and any other short-lived process). Differences over a run give
    the split."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {"daemon": 0.0, "runner": 0.0, "runner_attach": 0.0,
                             "sshd": 0.0}
    seen: list[tuple[str, str, list[str]]] = []  # pid, command line, stat fields
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            seen.append((entry.name, _cmdline(entry.name), fields))
    # an sshd session ("sshd: root@notty") names no path: it is a listener's child
    listeners = {pid for pid, cmd, _ in seen if marker in cmd and _kind(cmd) == "sshd"}
    for _pid, cmd, fields in seen:
        kind = _kind(cmd) if marker in cmd or fields[1] in listeners else "other"
        if kind != "other":
            out[kind] += (int(fields[11]) + int(fields[12])) * 1000 / tick
    me = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    out["bench"] = (int(me[11]) + int(me[12])) * 1000 / tick
    group = _cgroup_cpuacct()
    if group is not None:
        out["tree_ms"] = int((group / "cpuacct.usage").read_text()) / 1e6
    return out


def split_per_job(before: dict[str, float], after: dict[str, float],
                  jobs: int) -> dict[str, float]:
    """`cpu_by_process` differences per job; `jobs_and_rest` only inside a cgroup."""
    split = {k: round((after[k] - before[k]) / jobs, 2) for k in before if k != "tree_ms"}
    if "tree_ms" in before:
        tree = (after["tree_ms"] - before["tree_ms"]) / jobs
        split["jobs_and_rest"] = round(tree - sum(split.values()), 2)
        split["total"] = round(tree, 2)
    return split


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
