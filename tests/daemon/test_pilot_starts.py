"""How a pilot starts, as a site's admins would see it: on a cluster whose compute node
does not see the login node's disk (`site_slurm`), with a site setup that takes a
while, counting the `sbatch` calls and job steps the queue caused."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq
from tests.daemon.test_pilots import wait_until
from tests.harness.slurm import SlurmCluster
from tests.harness.slurm_fixtures import (
    ClusterQueue,
    site_home,
    toml_str,
    write_cluster_queue_config,
)
from tests.harness.sshd import SshdNode

pytestmark = pytest.mark.timeout(240)


def kinds(nvq: Nvq, kind: str) -> list[dict[str, object]]:
    return [e for e in nvq.events() if e["kind"] == kind]


def pilot_states(nvq: Nvq) -> dict[str, str]:
    return {n["name"]: n["state"] for n in nvq.json("queue", "nodes")["nodes"]}


def test_a_pilot_runs_on_a_compute_node_that_does_not_see_the_login_nodes_home(
    site_queue: ClusterQueue, site_slurm: SlurmCluster, tmp_path: Path
) -> None:
    # `home` exists only on the login node: Slurm's output may not point there (a
    # compute node cannot open it and ends the pilot before its script runs).
    nvq = site_queue()
    sbatch = site_slurm.sbatch_calls()
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "echo", "on a private node")
    code, [done] = nvq.wait(job["id"], timeout=150)
    assert (code, done["state"]) == (0, "completed"), (done, site_slurm.logs())
    assert nvq.ok("job", "logs", str(job["id"])).out == "on a private node\n"
    pilot = done["node"].removeprefix("hpc/")
    # The batch script's own log is on the compute node, in its view of `home`.
    login_side = site_home(site_slurm, tmp_path)
    compute_side = site_slurm.compute_view / login_side.relative_to(site_slurm.shared)
    assert (compute_side / pilot / "pilot.log").exists()
    assert not (login_side / pilot).exists()
    assert site_slurm.sbatch_calls() - sbatch == 1


def test_a_pilot_that_dies_at_start_is_retried_with_backoff_then_stops_with_one_alert(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # The site's setup fails after a few seconds, every time (a module that is gone).
    setup = ["sleep 4", "echo 'module: cuda/99.9 not found' >&2", "exit 3"]
    nvq = site_queue(setup=json.dumps(setup))
    sbatch = site_slurm.sbatch_calls()
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "true")
    wait_until("the cluster to stop asking", lambda: kinds(nvq, "cluster_refused"), 150)
    [alert] = kinds(nvq, "cluster_refused")
    message = str(alert["data"]["message"])  # type: ignore[index]
    assert "3 pilots in a row ended before their runner answered" in message, message
    assert "module: cuda/99.9 not found" in message, message
    assert "nvq cluster retry hpc" in message
    ended = kinds(nvq, "pilot_ended")
    assert len(ended) == 3, ended
    for event in ended:
        reason = str(event["data"]["reason"])  # type: ignore[index]
        assert reason.startswith("ended before its runner answered: "), reason
    assert site_slurm.sbatch_calls() - sbatch == 3
    [view] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert view["refused"] and "cuda/99.9" in view["refused"]
    # Stopped: the job still waits and more passes ask for nothing.
    nvq.ok("cluster", "status", "hpc")
    assert nvq.show(job["id"])["state"] == "pending"
    assert site_slurm.sbatch_calls() - sbatch == 3
    assert len(kinds(nvq, "cluster_refused")) == 1

    nvq.ok("cluster", "retry", "hpc")
    wait_until("a pilot after the retry", lambda: site_slurm.sbatch_calls() - sbatch == 4, 60)


def test_a_slow_start_costs_one_sbatch_one_step_and_no_node_down(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # A setup longer than node_grace (2s here): the pilot is starting, not down. Room
    # for a second pilot: one the demand rule did not ask for would be counted.
    nvq = site_queue(setup=json.dumps(["sleep 8"]), max_pilots="2")
    sbatch, steps = site_slurm.sbatch_calls(), site_slurm.job_steps()
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "echo", "done")

    seen: set[str] = set()  # the pilot's states while the job waited
    shown: list[str] = []  # `queue nodes` while it was starting

    def ran() -> bool:
        for name, state in pilot_states(nvq).items():
            if name.startswith("hpc/") and state not in seen:
                seen.add(state)
                if state == "starting":
                    shown.append(nvq.ok("queue", "nodes").out)
        return nvq.show(job["id"])["state"] not in ("pending", "running")

    wait_until("the job to run on the pilot and end", ran, 180)
    assert nvq.show(job["id"])["state"] == "completed", site_slurm.logs()
    assert site_slurm.sbatch_calls() - sbatch == 1
    assert site_slurm.job_steps() - steps <= 2, site_slurm.job_steps() - steps
    assert kinds(nvq, "node_down") == []
    assert "starting" in seen, seen
    assert shown and all("unreachable" not in t and "starting" in t for t in shown), shown
    [started] = kinds(nvq, "pilot_started")
    assert started["data"] == {"host": site_slurm.host}


def test_drain_scancel_and_a_job_back_in_the_queue_read_as_they_are(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # Two CPUs: two pilots run, the third waits in Slurm (Resources).
    nvq = site_queue(max_pilots="3")
    ids = [
        nvq.submit("--gpus", "1", "--vram", "60GiB", "--timeout", "5m", "--", "sleep", "300")["id"]
        for _ in range(3)
    ]

    def pilots() -> list[tuple[str, str]]:
        [view] = nvq.json("cluster", "status", "hpc")["clusters"]
        return [(p["node"], p["state"]) for p in view["pilots"]]

    def two_running_one_pending() -> bool:
        states = sorted(state for _, state in pilots())
        running = [j for j in ids if nvq.show(j)["state"] == "running"]
        return states == ["PENDING", "RUNNING", "RUNNING"] and len(running) == 2

    wait_until("two pilots running and one pending", two_running_one_pending, 150)
    [waiting] = [node for node, state in pilots() if state == "PENDING"]

    # Drained while a job waits: the pending pilot goes because of the drain.
    nvq.ok("cluster", "drain", "hpc")
    wait_until("the pending pilot released", lambda: kinds(nvq, "pilot_released"), 60)
    [released] = kinds(nvq, "pilot_released")
    assert (released["node"], released["data"]) == (
        waiting, {"reason": "released: the cluster is drained"}
    )

    # `cluster status` right after an scancel shows Slurm's word of now.
    [(victim, _), *_] = [(n, s) for n, s in pilots() if s == "RUNNING"]
    [moved] = [j for j in ids if nvq.show(j).get("node") == victim]
    site_slurm.run("scancel", victim.removeprefix("hpc/"))
    assert (victim, "RUNNING") not in pilots()

    # Its job is back in the queue (the drained cluster asks for no pilot): its old
    # attempt's runtime does not grow in `job ls`.
    wait_until("the job back in the queue", lambda: nvq.show(moved)["state"] == "pending", 90)
    row = next(
        line.split() for line in nvq.ok("job", "ls").out.splitlines()
        if line.split() and line.split()[0] == str(moved)
    )
    assert "pending" in row and "-" in row, row


def refused_cluster(site_queue: ClusterQueue) -> tuple[Nvq, dict[str, Any]]:
    """A queue whose cluster's partition Slurm refused, with a job waiting for it."""
    nvq = site_queue(partition=toml_str("nosuch"))
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "echo", "ran")
    wait_until("Slurm's refusal", lambda: kinds(nvq, "cluster_refused"), 90)
    return nvq, job


def test_a_clusters_change_applies_on_reload_and_lifts_the_refusal(
    site_queue: ClusterQueue, site_slurm: SlurmCluster, site_login: SshdNode, tmp_path: Path
) -> None:
    nvq, job = refused_cluster(site_queue)
    # The refusal says a config change lifts it: the partition is put right.
    home = toml_str(site_home(site_slurm, tmp_path))
    write_cluster_queue_config(nvq, site_slurm, site_login, tmp_path, home=home)
    out = nvq.ok("daemon", "reload").out
    assert "cluster hpc partition changed: applied" in out, out
    code, [done] = nvq.wait(job["id"], timeout=150)
    assert (code, done["state"]) == (0, "completed"), (done, site_slurm.logs())
    [reloaded] = kinds(nvq, "config_reloaded")
    assert reloaded["data"]["refused"] == []  # type: ignore[index]


def test_cluster_retry_reads_the_fixed_config_and_says_what_it_applied(
    site_queue: ClusterQueue, site_slurm: SlurmCluster, site_login: SshdNode, tmp_path: Path
) -> None:
    nvq, job = refused_cluster(site_queue)
    sbatch = site_slurm.sbatch_calls()
    config = (nvq.home / "config.toml").read_text()

    # A config.toml that does not load: refused with one line, nothing changes.
    nvq.write_config(config + "\n[[clusters]\n")
    bad = nvq.run("cluster", "retry", "hpc")
    assert bad.code == 1 and bad.out == "", bad
    assert len(bad.err.strip().splitlines()) == 1 and "config.toml" in bad.err, bad.err
    [view] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert view["refused"], view

    # The partition put right: the retry takes it (not the refused one again).
    home = toml_str(site_home(site_slurm, tmp_path))
    write_cluster_queue_config(nvq, site_slurm, site_login, tmp_path, home=home)
    out = nvq.ok("cluster", "retry", "hpc").out
    assert out.splitlines()[0] == (
        "cluster hpc partition changed: applied to its next pilots (requests resume)"
    ), out
    code, [done] = nvq.wait(job["id"], timeout=150)
    assert (code, done["state"]) == (0, "completed"), (done, site_slurm.logs())
    assert site_slurm.sbatch_calls() - sbatch == 1
    # Taken for good: a reload finds nothing of the cluster to change.
    assert "cluster hpc" not in nvq.ok("daemon", "reload").out

    # Unchanged: the retry only lifts the block, and says so (in its JSON too).
    again = nvq.json("cluster", "retry", "hpc")
    assert again["applied"] == "cluster hpc: config.toml unchanged: requests resume", again
    assert again["refused"] is None


def test_a_pilot_that_loses_its_runner_is_down_once_and_its_job_moves(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # The runner killed, not the Slurm job: the link and squeue both notice (the
    # batch script ends with its runner), whichever first; one node_down either way.
    nvq = site_queue(max_pilots="2")
    job = nvq.submit("--gpus", "1", "--timeout", "5m", "--", "sleep", "120")
    first = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=150)["node"]
    runner = nvq.json("node", "status", first)
    assert runner["runner_up"] and runner["hostname"], runner
    os.kill(int(runner["pid"]), signal.SIGKILL)

    again = nvq.wait_for(
        job["id"], lambda j: j["state"] == "running" and j["node"] != first, timeout=150
    )
    assert again["node"].startswith("hpc/")
    wait_until(
        "the lost pilot's end", lambda: any(e["node"] == first for e in kinds(nvq, "pilot_ended")), 60
    )
    down = [e for e in kinds(nvq, "node_down") if e["node"] == first]
    assert len(down) == 1, down
    reassigned = [e for e in kinds(nvq, "job_reassigned") if e["job_id"] == job["id"]]
    assert [e["node"] for e in reassigned] == [first], reassigned
    assert first not in pilot_states(nvq)
    nvq.ok("job", "cancel", str(job["id"]))


def test_a_pilot_that_fails_at_once_is_alerted_with_its_scripts_own_words(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # No such interpreter on the compute node: the batch script ends within moments,
    # before squeue shows it running, so no attach step relays its log; the log is
    # on the compute node only. Its words come back through the job's Comment.
    nvq = site_queue(python=toml_str("/opt/nosuch/python3"))
    nvq.submit("--gpus", "1", "--timeout", "2m", "--", "true")
    wait_until("the cluster to stop asking", lambda: kinds(nvq, "cluster_refused"), 150)
    [alert] = kinds(nvq, "cluster_refused")
    message = str(alert["data"]["message"])  # type: ignore[index]
    assert f"nvq pilot: /opt/nosuch/python3: not found on {site_slurm.host}" in message, message
    for event in kinds(nvq, "pilot_ended"):
        reason = str(event["data"]["reason"])  # type: ignore[index]
        assert "/opt/nosuch/python3: not found" in reason, reason
    nvq.ok("cluster", "status", "hpc")
    assert len(kinds(nvq, "cluster_refused")) == 1


def test_an_idle_pilot_that_loses_its_runner_is_down_once(
    site_queue: ClusterQueue, site_slurm: SlurmCluster
) -> None:
    # A node_grace longer than squeue's poll: the end of the allocation is seen
    # first, and it alone must say the node went down.
    nvq = site_queue(idle_release=toml_str("10m"))
    config = nvq.home / "config.toml"
    config.write_text(config.read_text().replace('node_grace = "2s"', 'node_grace = "60s"'))
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "true")
    code, [done] = nvq.wait(job["id"], timeout=150)
    assert code == 0, done
    pilot = done["node"]
    runner = nvq.json("node", "status", pilot)
    os.kill(int(runner["pid"]), signal.SIGKILL)
    wait_until(
        "the lost pilot's end",
        lambda: any(e["node"] == pilot for e in kinds(nvq, "pilot_ended")),
        90,
    )
    down = [e for e in kinds(nvq, "node_down") if e["node"] == pilot]
    assert len(down) == 1, down
    assert kinds(nvq, "pilot_released") == []


def attach_steps(home: Path) -> dict[int, str]:
    """The login node's `srun` attach steps into pilot homes under `home` (srun runs
    as two processes): pid → the pilot home it attaches to."""
    steps = {}
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv[0].endswith("srun") and "nvq-attach" in argv:
            target = argv[argv.index("nvq-attach") + 1]
            if target.startswith(f"{home}/"):
                steps[int(proc.name)] = target
    return steps


def test_a_reload_that_moves_home_leaves_running_pilots_where_they_are(
    site_queue: ClusterQueue, site_slurm: SlurmCluster, site_login: SshdNode, tmp_path: Path
) -> None:
    nvq = site_queue()
    long_grace = 'node_grace = "60s"'  # a reattach is not an outage here
    config = nvq.home / "config.toml"
    config.write_text(config.read_text().replace('node_grace = "2s"', long_grace))
    job = nvq.submit("--gpus", "1", "--timeout", "2m", "--", "sleep", "20")
    pilot = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=150)["node"]
    job_id = pilot.removeprefix("hpc/")
    shared = site_slurm.shared / tmp_path.name
    steps = attach_steps(shared)
    attached = f"{shared}/pilots/{job_id}"
    assert steps and set(steps.values()) == {attached}, steps

    moved = shared / "pilots-2"
    moved.mkdir()
    write_cluster_queue_config(nvq, site_slurm, site_login, tmp_path, home=toml_str(moved))
    config.write_text(config.read_text().replace('node_grace = "2s"', long_grace))
    assert "cluster hpc home changed" in nvq.ok("daemon", "reload").out
    # The link's step ends (a login node hiccup): it opens again where the pilot is.
    for pid in steps:
        os.kill(pid, signal.SIGKILL)
    wait_until("a new attach step", lambda: attach_steps(shared).keys() - steps.keys(), 60)
    assert set(attach_steps(shared).values()) == {attached}, attach_steps(shared)
    code, [done] = nvq.wait(job["id"], timeout=90)
    assert (code, done["state"], done["node"]) == (0, "completed", pilot), done
    assert kinds(nvq, "job_reassigned") == []
