"""Throughput: N `true` jobs over 4 sshd nodes with 8 fake GPUs each (1 GiB jobs),
from the first submit to the last completion, plus the submission rate through one
`--array` request, through the control socket (one request per job, no CLI start-up)
and through separate CLI calls.

`--beside TREE` runs the same workload with another checkout (a directory, or a git
revision exported and installed once by beside.py), `--rounds` times each, alternating,
and prints both figures and their ratio.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

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


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def beside(args: argparse.Namespace, argv: list[str]) -> None:
    """This tree and `args.beside`, `args.rounds` runs each, alternating."""
    import beside as other

    trees = {"this": other.ROOT, "beside": other.checkout(args.beside)}
    runs = other.alternate(Path(__file__).resolve(), argv, trees, args.rounds, args.dir)
    doc: dict[str, object] = {"bench": "throughput_beside", "machine": machine(),
                              "beside": args.beside, "dir": args.dir, "rounds": args.rounds,
                              "argv": argv}
    for name, docs in runs.items():
        doc[name] = {
            "jobs_per_s": _spread([float(d["jobs_per_s"]) for d in docs]),  # type: ignore[arg-type]
            "cpu_ms_per_job": _spread([float(d["cpu_ms_per_job"]) for d in docs]),  # type: ignore[arg-type]
            "runs": [d["jobs_per_s"] for d in docs],
            # where a job's CPU went, each process kind's median over the runs
            "cpu_ms_per_job_by_process": {
                k: round(statistics.median(float(d["cpu_ms_per_job_by_process"][k])  # type: ignore[index]
                                           for d in docs), 2)
                for k in docs[0]["cpu_ms_per_job_by_process"]  # type: ignore[attr-defined]
            },
            "not_completed": sum(int(d["not_completed"]) for d in docs),  # type: ignore[call-overload]
        }
    mine = [float(d["jobs_per_s"]) for d in runs["this"]]  # type: ignore[arg-type]
    theirs = [float(d["jobs_per_s"]) for d in runs["beside"]]  # type: ignore[arg-type]
    # each round's two runs are neighbours in time: their ratio cancels the slow drift
    doc["ratio_by_round"] = [round(a / b, 3) for a, b in zip(mine, theirs, strict=True)]
    doc["ratio"] = round(statistics.median(mine) / statistics.median(theirs), 3)
    emit(doc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--cli-calls", type=int, default=30)
    ap.add_argument("--nodes", type=int, default=4, help="sshd nodes of 8 cards each")
    ap.add_argument("--local-node", action="store_true",
                    help="the queue host's own node too, with 8 cards")
    ap.add_argument("--submit-flag", action="append", default=[],
                    help="an extra `job submit` flag for the timed jobs, e.g. --no-snapshot")
    ap.add_argument("--beside", metavar="TREE",
                    help="another checkout (directory or git revision) to run alternately")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tree with --beside")
    ap.add_argument("--dir", help="where the queue's and the nodes' homes go (TMPDIR), "
                    "e.g. /dev/shm for tmpfs; with --beside")
    args = ap.parse_args()
    if args.beside:
        argv = [a for a in sys.argv[1:]]
        for flag in ("--beside", "--rounds", "--dir"):
            while flag in argv:
                i = argv.index(flag)
                del argv[i:i + 2]
        beside(args, argv)
        return
    if args.dir:
        import tempfile

        tempfile.tempdir = args.dir
    doc: dict[str, object] = {"bench": "throughput", "machine": machine(), "jobs": args.jobs,
                              "nodes": args.nodes, "local_node": args.local_node}
    if args.submit_flag:
        doc["submit_flags"] = args.submit_flag
    with queue("ssh", nodes=args.nodes, gpus=EIGHT_CARDS, local_node=args.local_node) as nvq:
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
