"""The Slurm test cluster itself: a batch job runs, a step overlaps into it, scancel
ends it, and the login node's SSH sessions reach the same cluster; the shared site
cluster's compute node has a view of its own and its calls are counted."""

from __future__ import annotations

import subprocess

import pytest

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


def test_fake_gres_gpus_are_counted_and_handed_out(slurm_cluster: SlurmCluster) -> None:
    if not slurm_cluster.gpus:
        pytest.skip("no fake GRES GPUs here (device nodes cannot be made)")
    assert slurm_cluster.run("sinfo", "-h", "-o", "%G").stdout.strip() == "gpu:2"
    job_id = slurm_cluster.run(
        "sbatch", "--parsable", "--gres=gpu:1", "--wrap", "sleep 120"
    ).stdout.strip()
    slurm_cluster.wait_state(job_id, "RUNNING")
    inside = slurm_cluster.run(
        "srun", f"--jobid={job_id}", "--overlap", "-n1", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"
    )
    assert inside.stdout.strip() in ("0", "1")
    refused = slurm_cluster.run("sbatch", "--gres=gpu:3", "--wrap", "true", check=False)
    assert refused.returncode != 0
    assert "Requested node configuration is not available" in refused.stderr


def test_login_node_sessions_see_the_cluster(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode
) -> None:
    r = subprocess.run(
        [
            "ssh",
            "-p",
            str(slurm_login.port),
            "-i",
            str(slurm_login.identity),
            "-o",
            f"UserKnownHostsFile={slurm_login.known_hosts}",
            "-o",
            "BatchMode=yes",
            f"{slurm_login.user}@{slurm_login.host}",
            "sinfo -h -o '%P %t'",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [f"{PARTITION}*", "idle"]


def test_the_site_clusters_compute_node_does_not_see_the_login_nodes_files(
    site_slurm: SlurmCluster,
) -> None:
    (site_slurm.shared / "marker").write_text("login side\n")
    sbatch, steps = site_slurm.sbatch_calls(), site_slurm.job_steps()
    job_id = site_slurm.run(
        "sbatch", "--parsable", "--output=/dev/null", "--gres=gpu:2", "--wrap", "sleep 120"
    ).stdout.strip()
    site_slurm.wait_state(job_id, "RUNNING")
    inside = site_slurm.run(
        "srun", f"--jobid={job_id}", "--overlap", "-n1", "sh", "-c",
        f"ls -A {site_slurm.shared}; echo gpus=$SLURM_STEP_GPUS",
    )
    # A directory of its own where the login node keeps the marker (other tests' pilots,
    # sharing this cluster, may have left their homes in it: the marker is what must
    # not show).
    *listed, gpus = inside.stdout.split()
    assert "marker" not in listed and gpus == "gpus=0,1", inside.stdout
    assert site_slurm.run("sinfo", "-h", "-o", "%G").stdout.strip() == "gpu:4"
    assert (site_slurm.sbatch_calls() - sbatch, site_slurm.job_steps() - steps) == (1, 1)
