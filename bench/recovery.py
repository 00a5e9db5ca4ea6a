"""Recovery: 500 jobs running over 4 sshd nodes, `kill -9` of the daemon, half of the
jobs end while no daemon runs, restart: seconds until every job is accounted for
(the ended ones settled with their exit, the others re-adopted as running), and how
many were lost or ran twice (must be 0).

Jobs wait on a shared flock held by this script (no CPU while waiting); each records
its run in a ledger, so a job that ran twice shows twice.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import time
from collections import Counter

from common import emit, machine, queue, wait_nodes_up

from nvq.client import Client
from nvq.model import JobSpec

EIGHT_CARDS = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\nname = "Bench card {i}"\nmemory = "80GiB"\n' for i in range(8)
)


def counts(nvq: object) -> dict[str, int]:
    return nvq.json("queue", "status")["counts"]  # type: ignore[attr-defined,no-any-return]


def until(pred: object, timeout: float) -> float:
    t0 = time.monotonic()
    while not pred():  # type: ignore[operator]
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("timed out")
        time.sleep(0.05)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=500)
    args = ap.parse_args()
    n = args.jobs
    doc: dict[str, object] = {"bench": "recovery", "machine": machine(), "jobs": n}
    with queue("ssh", nodes=4, gpus=EIGHT_CARDS) as nvq:
        wait_nodes_up(nvq)
        root = nvq.home.parent
        ledger = root / "ledger"
        gates = [root / "gate-even", root / "gate-odd"]
        held = []
        for g in gates:
            f = open(g, "w")  # noqa: SIM115 - held until released
            fcntl.flock(f, fcntl.LOCK_EX)
            held.append(f)
        body = (
            f'g={gates[0]}; [ $((NVQ_JOB_ID % 2)) = 1 ] && g={gates[1]}; '
            f'flock -s "$g" true; echo $NVQ_JOB_ID >> {ledger}'
        )
        for _ in range(n):
            Client(nvq.home).submit_spec(JobSpec(command=body, vram_mb=512))
        until(lambda: counts(nvq)["running"] == n and _started(nvq) >= n, 300)
        os.kill(int((nvq.home / "daemon.pid").read_text()), signal.SIGKILL)
        fcntl.flock(held[0], fcntl.LOCK_UN)  # the even half ends while no daemon runs
        until(lambda: len(_ledger(ledger)) >= n // 2, 120)
        t0 = time.monotonic()
        nvq.ok("queue", "status")  # starts a new daemon

        def accounted() -> bool:
            got = counts(nvq)
            return bool(got["completed"] == n // 2 and got["running"] == n - n // 2)

        until(accounted, 120)
        doc["recovery_s"] = round(time.monotonic() - t0, 2)
        fcntl.flock(held[1], fcntl.LOCK_UN)
        until(lambda: counts(nvq)["completed"] + counts(nvq)["failed"] + counts(nvq)["lost"]
              >= n, 300)
        runs = _ledger(ledger)
        final = counts(nvq)
        doc["completed"] = final["completed"]
        doc["lost"] = final["lost"]
        doc["failed"] = final["failed"]
        doc["ran_twice"] = sum(1 for v in runs.values() if v > 1)
        doc["never_ran"] = n - len(runs)
        for f in held:
            f.close()
    emit(doc)


def _started(nvq: object) -> int:
    events = nvq.json("queue", "events", "--since", "0")["events"]  # type: ignore[attr-defined]
    return sum(1 for e in events if e["kind"] == "job_started")


def _ledger(path: object) -> Counter[int]:
    try:
        text = path.read_text()  # type: ignore[attr-defined]
    except OSError:
        return Counter()
    return Counter(int(x) for x in text.split())


if __name__ == "__main__":
    main()
