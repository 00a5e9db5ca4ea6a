"""The Slurm test cluster itself: a batch job runs, a step overlaps into it, scancel
ends it, and the login node's SSH sessions reach the same cluster."""

from __future__ import annotations

import subprocess

from tests.harness.slurm import PARTITION, SlurmCluster
from tests.harness.sshd import SshdNode


def test_sbatch_srun_overlap_and_scancel(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.run("sbatch", "--parsable", "-t", "5", "--wrap", "sleep 120").stdout
    job_id = job.strip()
    assert job_id.isdigit()
    slurm_cluster.wait_state(job_id, "RUNNING")

    inside = slurm_cluster.run(
        "srun", f"--jobid={job_id}", "--overlap", "-n1", "sh", "-c", "echo in $SLURM_JOB_ID"
    )
    assert inside.stdout.strip() == f"in {job_id}"

    slurm_cluster.run("scancel", job_id)
    slurm_cluster.wait_state(job_id, "")


def test_login_node_sessions_see_the_cluster(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode
) -> None:
    r = subprocess.run(
        [
            "ssh", "-p", str(slurm_login.port), "-i", str(slurm_login.identity),
            "-o", f"UserKnownHostsFile={slurm_login.known_hosts}", "-o", "BatchMode=yes",
            f"{slurm_login.user}@{slurm_login.host}", "sinfo -h -o '%P %t'",
        ],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [f"{PARTITION}*", "idle"]
