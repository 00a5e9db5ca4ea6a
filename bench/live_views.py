"""What open live views cost the daemon: `--jobs` jobs running on the local node (fake
cards), each with a progress line, and N viewers each reading what the TUI and the
web page read to keep moving (`ProgressLines`) every 5 s, as they do.

For each N in `--viewers`, the daemon's own CPU time (utime + stime from /proc) over
`--window` seconds, with no viewer first (samples, the runner's link: the floor).
Figures: the daemon's share of a core with N viewers; what one viewer adds (% of a
core, the floor taken off, over N); the daemon's ms per read (the added CPU over the
reads made); and a read's round trip seen by a viewer. `--listing` measures, the same
way, a viewer reading a listing of the active jobs instead (what the TUI read before
ProgressLines), for comparison.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from common import emit, machine, queue, summary_ms, wait_nodes_up

from nvq.client import Client

PERIOD = 5.0  # how often the TUI and the web page read progress (nvq/tui/app.py)
EIGHT_CARDS = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\nname = "Bench card {i}"\nmemory = "80GiB"\n' for i in range(8)
)


def daemon_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def running(home: str) -> int:
    with Client(home) as q:
        return sum(1 for j in q.jobs(active=True) if j.state == "running")


def with_lines(home: str) -> int:
    with Client(home) as q:
        return sum(1 for p in q.progress_lines() if p.progress)


def viewers(home: str, count: int, window: float, read: Callable[[Client], object],
            times: list[float]) -> int:
    """`count` viewers reading every PERIOD, their starts spread over one period, for
    `window` seconds; the reads made."""
    stop = time.monotonic() + window
    made = [0]
    lock = threading.Lock()

    def one(offset: float) -> None:
        client = Client(home)
        at = time.monotonic() + offset
        while True:
            time.sleep(max(0.0, at - time.monotonic()))
            if time.monotonic() >= stop:
                return
            t = time.perf_counter()
            read(client)
            took = time.perf_counter() - t
            with lock:
                times.append(took)
                made[0] += 1
            at += PERIOD

    threads = [threading.Thread(target=one, args=(i * PERIOD / count,), daemon=True)
               for i in range(count)]
    for th in threads:
        th.start()
    time.sleep(max(0.0, stop - time.monotonic()))
    for th in threads:
        th.join()
    return made[0]


def measure(home: str, pid: int, counts: list[int], window: float,
            read: Callable[[Client], object]) -> dict[str, object]:
    out: dict[str, object] = {}
    floor = None
    for n in counts:
        times: list[float] = []
        before = daemon_cpu_s(pid)
        t0 = time.monotonic()
        if n == 0:
            time.sleep(window)
            reads = 0
        else:
            reads = viewers(home, n, window, read, times)
        cpu = daemon_cpu_s(pid) - before
        pct = 100 * cpu / (time.monotonic() - t0)
        row: dict[str, object] = {"daemon_core_pct": round(pct, 2), "reads": reads}
        if n == 0:
            floor = pct
        elif floor is not None:
            row["per_viewer_core_pct"] = round((pct - floor) / n, 3)
            added = cpu - floor / 100 * (time.monotonic() - t0)
            row["daemon_ms_per_read"] = round(1000 * max(0.0, added) / max(1, reads), 2)
            row["read_ms"] = summary_ms(times)
        out[str(n)] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--viewers", default="0,1,10,50")
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--listing", action="store_true")
    args = ap.parse_args()
    counts = [int(x) for x in args.viewers.split(",")]
    if counts[0] != 0:
        counts = [0, *counts]
    doc: dict[str, object] = {"bench": "live_views", "machine": machine(), "jobs": args.jobs,
                              "period_s": PERIOD, "window_s": args.window}
    with queue("local", gpus=EIGHT_CARDS) as nvq:
        wait_nodes_up(nvq)
        home = str(nvq.home)
        body = 'echo "step $NVQ_JOB_ID of 1000" > "$NVQ_STATUS_FILE"; exec sleep 3600'
        with Client(home) as q:
            q.submit(["sh", "-c", body], vram="512MiB", name="live", array=f"0-{args.jobs - 1}")
        t0 = time.monotonic()
        while running(home) < args.jobs or with_lines(home) < args.jobs:
            if time.monotonic() - t0 > 900:
                raise RuntimeError("the jobs did not all start")
            time.sleep(2)
        doc["start_s"] = round(time.monotonic() - t0, 1)
        pid = int((nvq.home / "daemon.pid").read_text())
        doc["progress_lines"] = measure(home, pid, counts, args.window,
                                        lambda c: c.progress_lines())
        if args.listing:
            doc["active_listing"] = measure(home, pid, counts, args.window,
                                            lambda c: c.jobs(active=True))
    emit(doc)


if __name__ == "__main__":
    main()
