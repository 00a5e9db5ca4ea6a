"""Throughput: N `true` jobs over 4 sshd nodes with 8 fake GPUs each (1 GiB jobs),
from the first submit to the last completion, plus the submission rate through one
`--array` request, through the control socket (one request per job, no CLI start-up)
and through separate CLI calls.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time

from common import cpu_busy_ms, cpu_by_process, emit, machine, queue, split_per_job, wait_nodes_up

from nvq.client import Client
from nvq.model import JobSpec

EIGHT_CARDS = 'cuda = "13.0"\n' + "".join(
    f'[[gpu]]\nname = "Bench card {i}"\nmemory = "8GiB"\n' for i in range(8)
)


def _has_array(nvq: object) -> bool:
    r = nvq.run("job", "submit", "--help")  # type: ignore[attr-defined]
    return "--array" in r.out


def _wait_all_done(nvq: object, total: int, timeout: float) -> dict[str, int]:
    """Poll the counts until every job ended: one request on the socket from this
    process, every 0.25 s. (A CLI process per poll took a fifth of a core from the
    queue it measured.)"""
    client = Client(nvq.home)  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while True:
        counts = client.status().counts
        done = sum(counts[s] for s in ("completed", "failed", "timeout", "cancelled", "lost"))
        if done >= total or time.monotonic() > deadline:
            return counts
        time.sleep(0.25)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--cli-calls", type=int, default=30)
    ap.add_argument("--submit-flag", action="append", default=[],
                    help="an extra `job submit` flag for the timed jobs, e.g. --no-snapshot")
    args = ap.parse_args()
    doc: dict[str, object] = {"bench": "throughput", "machine": machine(), "jobs": args.jobs}
    if args.submit_flag:
        doc["submit_flags"] = args.submit_flag
    with queue("ssh", nodes=4, gpus=EIGHT_CARDS) as nvq:
        wait_nodes_up(nvq)
        # Separate CLI calls: each is a fresh `nvq` process.
        started = time.monotonic()
        for _ in range(args.cli_calls):
            nvq.ok("job", "submit", "--vram", "1GiB", "--", "true")
        cli_rate = args.cli_calls / (time.monotonic() - started)
        doc["submit_rate_cli_calls_per_s"] = round(cli_rate, 1)
        _wait_all_done(nvq, args.cli_calls, 120)

        marker = str(nvq.home.parent)
        t0 = time.monotonic()
        cpu0 = cpu_busy_ms()
        split0 = cpu_by_process(marker)
        if _has_array(nvq):
            r = nvq.ok("job", "submit", "--json", "--vram", "1GiB", "--array",
                       f"0-{args.jobs - 1}", *args.submit_flag, "--", "true")
            submitted = time.monotonic() - t0
            doc["submit_via"] = "one --array request"
            assert r.code == 0
        else:
            for _ in range(args.jobs):
                Client(nvq.home).submit_spec(JobSpec(command="true", vram_mb=1024))
            submitted = time.monotonic() - t0
            doc["submit_via"] = "control socket, one request per job (no --array yet)"
        doc["submit_rate_bulk_per_s"] = round(args.jobs / submitted, 1)
        counts = _wait_all_done(nvq, args.cli_calls + args.jobs, 900)
        took = time.monotonic() - t0
        doc["cpu_ms_per_job"] = round((cpu_busy_ms() - cpu0) / args.jobs, 2)
        doc["cpu_ms_per_job_by_process"] = split_per_job(split0, cpu_by_process(marker),
                                                         args.jobs)
        doc["cores_busy"] = round((cpu_busy_ms() - cpu0) / 1000 / took, 2)
        doc["end_to_end_s"] = round(took, 2)
        doc["jobs_per_s"] = round(args.jobs / took, 1)
        doc["completed"] = counts["completed"] - args.cli_calls
        doc["not_completed"] = args.jobs + args.cli_calls - counts["completed"]
        doc["placement"] = nvq.json("queue", "status").get("placement")
    emit(doc)


if __name__ == "__main__":
    main()
