"""A queue whose only capacity is a one-host Slurm cluster on loopback (the test
harness's): how long a job waits for a pilot, cold, with `scale_after = 0`.

Per run, one job is submitted while no pilot exists; the daemon asks for one, Slurm
starts it, the daemon attaches through `srun --overlap` and starts the job there.
Then the pilot is released (`idle_release = 1s`) and gone from Slurm before the
next run. Figures:

* `submit_to_running`: `nvq job submit` returned → the job's start (its `started_at`).
* `pilot_start_to_first_job`: the allocation's StartTime in Slurm (whole seconds) →
  the job's start: the runner's start-up, the attach and the dispatch.
* `attach_to_first_job`: the pilot node's `node_up` event → the job's start.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import emit, machine, summary_ms

from tests.cluster import make_nvq
from tests.harness.slurm import SlurmCluster, SlurmUnavailable
from tests.harness.slurm_fixtures import toml_str, write_cluster_queue_config
from tests.harness.sshd import SshdNode, make_client_key


def start_time(cluster: SlurmCluster, job_id: str) -> float:
    out = cluster.run("scontrol", "show", "job", "-o", job_id).stdout
    match = re.search(r"StartTime=(\S+)", out)
    assert match, out
    return datetime.fromisoformat(match.group(1)).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-slurm-"))
    try:
        cluster = SlurmCluster.start(gpus=2)
    except SlurmUnavailable:
        cluster = SlurmCluster.start()
    login = SshdNode(tmp / "login", make_client_key(tmp / "client"))
    nvq = make_nvq(tmp)
    waits: list[float] = []
    from_start: list[float] = []
    from_attach: list[float] = []
    try:
        cluster.login_node_env(login)
        login.start()
        write_cluster_queue_config(nvq, cluster, login, tmp, idle_release=toml_str("1s"))
        nvq.ok("queue", "status")
        gpus = "1" if cluster.gpus else "0"
        for _ in range(args.runs):
            since = max((e["id"] for e in nvq.events()), default=0)
            job = nvq.submit("--gpus", gpus, "--timeout", "1m", "--", "true")
            returned = time.time()
            _, [done] = nvq.wait(job["id"], timeout=120)
            assert done["state"] == "completed", done
            node = done["node"]
            pilot = node.removeprefix("hpc/")
            events = nvq.events(since)
            up = next(e["time"] for e in events if e["kind"] == "node_up" and e["node"] == node)
            waits.append(done["started_at"] - returned)
            from_start.append(done["started_at"] - start_time(cluster, pilot))
            from_attach.append(done["started_at"] - up)
            cluster.wait_state(pilot, "", timeout=60)
        emit(
            {
                "bench": "slurm_pilot",
                "machine": machine(),
                "gres_gpus": cluster.gpus,
                "submit_to_running": summary_ms(waits),
                "pilot_start_to_first_job": summary_ms(from_start),
                "attach_to_first_job": summary_ms(from_attach),
            }
        )
    finally:
        nvq.shutdown()
        login.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
