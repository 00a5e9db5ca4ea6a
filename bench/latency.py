"""Exit → next start, and submit → running, on the local node and on an sshd node.

exit → next start: one card that holds one job at a time, N jobs queued behind each
other; each job writes bash's $EPOCHREALTIME as its first and last instruction
(no fork, so the stamp is the instruction itself). The gap is the next job's first
stamp minus the previous job's last one: the runner seeing the exit, journaling it,
the daemon committing the exit and the next dispatch, the runner starting the job.

The same through a lane (`lane_exit_to_next_start`): every job appended to the
card's lane with `--lane NODE:0`, its command given as words (`-- bash -c BODY`, so
the job's script runs bash once more than a one-string command does).

submit → running: on an idle node, from the moment `nvq job submit` returns to the
job's first instruction, one job at a time.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time
from itertools import pairwise
from pathlib import Path

from common import emit, machine, python_start, queue, summary_ms, wait_nodes_up

STAMP = 'printf "%s {tag} $NVQ_JOB_ID\\n" "$EPOCHREALTIME" >> {log}'


def exit_to_start(kind: str, pairs: int, lane: bool = False) -> dict[str, float]:
    with queue(kind) as nvq:
        wait_nodes_up(nvq)
        log = nvq.home.parent / "stamps.log"
        body = f"{STAMP.format(tag='start', log=log)}; {STAMP.format(tag='end', log=log)}"
        # A blocker holds the card while the chain is queued behind it, so every gap
        # is a real exit → start hand-over, not the submit rate.
        gate = nvq.home.parent / "gate"
        node = "local" if kind == "local" else nvq.json("queue", "nodes")["nodes"][0]["name"]
        where = ["--lane", f"{node}:0"] if lane else []
        blocker = nvq.submit("--vram", "20GiB", *where, "--",
                             f"while [ ! -e {gate} ]; do sleep 0.01; done")
        command = ["bash", "-c", body] if lane else [body]
        ids = [nvq.submit("--vram", "20GiB", *where, "--", *command)["id"]
               for _ in range(pairs + 1)]
        gate.touch()
        code, _ = nvq.wait(blocker["id"], *ids, timeout=600)
        assert code == 0
        stamps: dict[tuple[str, int], float] = {}
        for line in Path(log).read_text().splitlines():
            t, tag, job = line.split()
            stamps[(tag, int(job))] = float(t)
        gaps = [stamps[("start", b)] - stamps[("end", a)] for a, b in pairwise(ids)]
        return summary_ms(gaps)


def submit_to_running(kind: str, runs: int) -> dict[str, dict[str, float]]:
    with queue(kind) as nvq:
        wait_nodes_up(nvq)
        log = nvq.home.parent / "stamps.log"
        delays, from_start = [], []
        for _ in range(runs):
            called = time.time()
            r = nvq.ok("job", "submit", "--json", "--vram", "1GiB", "--", STAMP.format(tag="start", log=log))
            returned = time.time()
            job_id = r.json()["id"]
            nvq.wait(job_id)
            started = next(
                float(line.split()[0])
                for line in Path(log).read_text().splitlines()
                if line.split()[2] == str(job_id)
            )
            delays.append(started - returned)
            from_start.append(started - called)
        # The CLI is a fresh Python process: its exit (interpreter teardown) comes after
        # the daemon has answered, so the job is often running before the call returns.
        return {
            "after_return": summary_ms(delays),
            "after_call_start": summary_ms(from_start),
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", choices=["local", "ssh", "both"], default="both")
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    floor = python_start(10)
    kinds = ["local", "ssh"] if args.node == "both" else [args.node]
    # how loaded the machine was: a bare interpreter's start, p50 ms
    doc: dict[str, object] = {"bench": "latency", "machine": machine(), "python_start": floor}
    for kind in kinds:
        doc[f"{kind}_exit_to_next_start"] = exit_to_start(kind, args.pairs)
        doc[f"{kind}_lane_exit_to_next_start"] = exit_to_start(kind, args.pairs, lane=True)
        doc[f"{kind}_submit_to_running"] = submit_to_running(kind, args.runs)
    emit(doc)


if __name__ == "__main__":
    main()
