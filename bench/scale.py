"""Scale: one daemon with 64 nodes (64 runners behind their own sshd, 8 fake GPUs
each, sampling every 2 s). Measures the daemon's idle CPU share and resident memory,
then fills every card with foreign work, queues 10,000 jobs that must wait, and reads
the time of the daemon's placement passes over them (and its CPU share meanwhile).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from common import emit, machine, queue, wait_nodes_up

from nvq.client import Client
from nvq.model import JobSpec

CARD = 'name = "Bench H100"\nmemory = "80GiB"\n'
EMPTY = 'cuda = "13.0"\n' + "".join(f"[[gpu]]\n{CARD}" for _ in range(8))
FULL = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\n{CARD}[[gpu.process]]\npid = {4000 + i}\nuser = "someone"\nused = "79GiB"\n'
    for i in range(8)
)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_share(pid: int, seconds: float) -> float:
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--window", type=float, default=20.0)
    args = ap.parse_args()
    doc: dict[str, object] = {"bench": "scale", "machine": machine(), "nodes": args.nodes}
    started = time.monotonic()
    with queue("ssh", nodes=args.nodes, gpus=EMPTY, sample_interval=2.0) as nvq:
        wait_nodes_up(nvq, timeout=max(300, 3 * args.nodes))
        doc["all_nodes_up_s"] = round(time.monotonic() - started, 1)
        pid = int((nvq.home / "daemon.pid").read_text())
        time.sleep(3)
        doc["idle_cpu_percent"] = round(cpu_share(pid, args.window), 2)
        doc["idle_rss_mb"] = round(rss_mb(pid), 1)

        for gpu_file in nvq.home.parent.glob("gpus-n*.toml"):
            gpu_file.write_text(FULL)
        time.sleep(4)  # every runner has sampled its full cards
        t0 = time.monotonic()
        if "--array" in nvq.run("job", "submit", "--help").out:
            nvq.ok("job", "submit", "--vram", "8GiB", "--array", f"1-{args.pending}", "--", "true")
        else:
            for _ in range(args.pending):
                Client(nvq.home).submit_spec(JobSpec(command="true", vram_mb=8192))
        doc["submit_pending_s"] = round(time.monotonic() - t0, 1)
        passes: list[float] = []
        c0, w0 = cpu_seconds(pid), time.monotonic()
        while time.monotonic() - w0 < args.window:
            stats = nvq.json("queue", "status").get("placement") or {}
            if stats.get("pending", 0) >= args.pending:
                passes.append(float(stats["last_pass_ms"]))
            time.sleep(0.5)
        doc["busy_cpu_percent"] = round(
            100 * (cpu_seconds(pid) - c0) / (time.monotonic() - w0), 2
        )
        doc["placement_pass_ms"] = {
            "n": len(passes),
            "p50": round(statistics.median(passes), 2) if passes else None,
            "max": round(max(passes), 2) if passes else None,
        }
        doc["rss_mb_with_pending"] = round(rss_mb(pid), 1)
        counts = nvq.json("queue", "status")["counts"]
        doc["still_pending"] = counts["pending"]
    doc["wall_s"] = round(time.monotonic() - started, 1)
    emit(doc)


if __name__ == "__main__":
    main()
