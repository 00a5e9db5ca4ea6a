"""A queue whose only capacity is a one-host Slurm cluster on loopback (the test
harness's, four fake GRES GPUs, two CPUs): what a job waits for a pilot, and what the
queue asks of Slurm for it, the figures a site's admins would look at.

By default the compute node does not see the login node's disk (slurmd in a mount
namespace of its own, `private_compute`); `--shared-home` lets it see it, which is
how code from before pilots wrote their output there can be measured at all.

* **cold starts** (`--runs`): one job submitted while no pilot exists (`scale_after =
  0`); the daemon asks for one, Slurm starts it, the daemon attaches and starts the
  job. The pilot is released (`idle_release = 1s`) and gone before the next run.
  `submit_to_running` (submit returned → the job's start), `pilot_start_to_first_job`
  (the allocation's StartTime in Slurm, whole seconds → the job's start),
  `attach_to_first_job` (the pilot node's `node_up` → the job's start).
  `sbatch_per_start`: sbatch calls per run (one job: goal 1).
* **sbatch per 100 jobs** (`--jobs`, scaled to 100): that many one-card jobs of a
  second each, needing a card to themselves, wait at once; `max_pilots = 2`, so the
  demand rule asks for exactly 2 pilots. `sbatch_calls` (slurmctld's log),
  `pilots_needed` (2, or fewer jobs), `spare_sbatch` (the difference: goal 0),
  `pilots_used` (pilots that ran a job).
* **a slow start** (`--setup-seconds`, default 40): one job, one pilot whose site
  `setup` takes that long, `node_grace = 2s`, `max_pilots = 2`. `sbatch_calls` (goal
  1: no spare), `job_steps_per_start` (slurmd's log: goal ≤ 2), `node_down_per_start`
  (goal 0).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import emit, machine, summary_ms

from tests.cluster import Nvq, make_nvq
from tests.harness.slurm import SlurmCluster
from tests.harness.slurm_fixtures import toml_str, write_cluster_queue_config
from tests.harness.sshd import ClientKey, SshdNode, make_client_key


def start_time(cluster: SlurmCluster, job_id: str) -> float:
    out = cluster.run("scontrol", "show", "job", "-o", job_id).stdout
    match = re.search(r"StartTime=(\S+)", out)
    assert match, out
    return datetime.fromisoformat(match.group(1)).timestamp()


class Site:
    """The cluster and one login node; a fresh queue per figure."""

    def __init__(self, tmp: Path, cluster: SlurmCluster, key: ClientKey) -> None:
        self.tmp = tmp
        self.cluster = cluster
        self.login = SshdNode(tmp / "login", key)
        cluster.login_node_env(self.login)
        self.login.start()
        self.made = 0

    def queue(self, **settings: str) -> Nvq:
        self.made += 1
        where = self.tmp / f"q{self.made}"
        where.mkdir()
        nvq = make_nvq(where)
        home = self.cluster.shared / f"q{self.made}" / "pilots"
        home.mkdir(parents=True)
        settings = {"home": toml_str(home), **settings}
        write_cluster_queue_config(nvq, self.cluster, self.login, where, **settings)
        nvq.ok("queue", "status")
        return nvq

    def close(self) -> None:
        self.login.close()


def cold_starts(site: Site, runs: int) -> dict[str, object]:
    cluster = site.cluster
    nvq = site.queue(idle_release=toml_str("1s"))
    sbatch = cluster.sbatch_calls()
    waits: list[float] = []
    from_start: list[float] = []
    from_attach: list[float] = []
    try:
        for _ in range(runs):
            since = max((e["id"] for e in nvq.events()), default=0)
            job = nvq.submit("--gpus", "1", "--timeout", "1m", "--", "true")
            returned = time.time()
            _, [done] = nvq.wait(job["id"], timeout=300)
            assert done["state"] == "completed", done
            node = done["node"]
            pilot = node.removeprefix("hpc/")
            events = nvq.events(since)
            up = next(e["time"] for e in events if e["kind"] == "node_up" and e["node"] == node)
            waits.append(done["started_at"] - returned)
            from_start.append(done["started_at"] - start_time(cluster, pilot))
            from_attach.append(done["started_at"] - up)
            cluster.wait_state(pilot, "", timeout=60)
        calls = cluster.sbatch_calls() - sbatch
    finally:
        nvq.shutdown()
        cluster.reset_jobs()
    return {
        "sbatch_per_start": round(calls / runs, 2),
        "submit_to_running": summary_ms(waits),
        "pilot_start_to_first_job": summary_ms(from_start),
        "attach_to_first_job": summary_ms(from_attach),
    }


def sbatch_per_jobs(site: Site, jobs: int) -> dict[str, object]:
    cluster = site.cluster
    nvq = site.queue(max_pilots="2", idle_release=toml_str("10s"))
    before = cluster.sbatch_calls()
    try:
        ids = [
            nvq.submit("--gpus", "1", "--vram", "60GiB", "--timeout", "1m", "--", "sleep", "1")[
                "id"
            ]
            for _ in range(jobs)
        ]
        _, done = nvq.wait(*ids, timeout=600)
        assert all(d["state"] == "completed" for d in done), done
        calls = cluster.sbatch_calls() - before
        used = len({d["node"] for d in done})
        needed = min(2, jobs)
    finally:
        nvq.shutdown()
        cluster.reset_jobs()
    return {
        "jobs": jobs,
        "sbatch_calls": calls,
        "pilots_needed": needed,
        "spare_sbatch": calls - needed,
        "pilots_used": used,
        "sbatch_per_100_jobs": round(calls * 100 / jobs, 2),
    }


def slow_start(site: Site, setup_seconds: float) -> dict[str, object]:
    cluster = site.cluster
    # Room for a second pilot: one the rule did not ask for would show.
    nvq = site.queue(setup=json.dumps([f"sleep {setup_seconds:g}"]), max_pilots="2")
    sbatch, steps = cluster.sbatch_calls(), cluster.job_steps()
    try:
        asked = time.time()
        job = nvq.submit("--gpus", "1", "--timeout", "1m", "--", "true")
        _, [done] = nvq.wait(job["id"], timeout=setup_seconds + 300)
        assert done["state"] == "completed", done
        downs = sum(1 for e in nvq.events() if e["kind"] == "node_down")
        figures = {
            "setup_seconds": setup_seconds,
            "sbatch_calls": cluster.sbatch_calls() - sbatch,
            "job_steps_per_start": cluster.job_steps() - steps,
            "node_down_per_start": downs,
            "submit_to_start_s": round(done["started_at"] - asked, 1),
        }
    finally:
        nvq.shutdown()
        cluster.reset_jobs()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="cold starts timed")
    parser.add_argument("--jobs", type=int, default=100, help="jobs for the sbatch count")
    parser.add_argument("--setup-seconds", type=float, default=40.0)
    parser.add_argument("--shared-home", action="store_true",
                        help="the compute node sees the login node's disk")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-slurm-"))
    cluster = SlurmCluster.start(gpus=4, private_compute=not args.shared_home)
    site = Site(tmp, cluster, make_client_key(tmp / "client"))
    try:
        doc: dict[str, object] = {
            "bench": "slurm_pilot",
            "machine": machine(),
            "private_compute": not args.shared_home,
        }
        if args.runs:
            doc.update(cold_starts(site, args.runs))
        if args.jobs:
            doc["sbatch"] = sbatch_per_jobs(site, args.jobs)
        if args.setup_seconds:
            doc["slow_start"] = slow_start(site, args.setup_seconds)
        emit(doc)
    finally:
        site.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
