"""A queue whose only capacity is a Slurm cluster: the daemon requests a pilot for a
waiting job, runs the job there, and gives the pilot back once it sits idle."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from nvq import __version__ as nvq_version
from tests.cli.test_job_reach import first_json, logs_until
from tests.cluster import Nvq
from tests.harness.slurm import SlurmCluster
from tests.harness.slurm_fixtures import ClusterQueue, pilot_gpus, toml_str
from tests.harness.sshd import SshdNode

pytestmark = pytest.mark.timeout(180)


def nodes(nvq: Nvq) -> dict[str, str]:
    return {n["name"]: n["state"] for n in nvq.json("queue", "nodes")["nodes"]}


def test_waiting_job_runs_on_a_pilot_that_is_released_when_idle(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue()
    gpus = pilot_gpus(slurm_cluster)
    job = nvq.submit("--gpus", gpus, "--timeout", "2m", "--", "echo", "on the cluster")
    code, [done] = nvq.wait(job["id"], timeout=120)
    assert (code, done["state"]) == (0, "completed"), done
    assert done["node"].startswith("hpc/")
    assert nvq.ok("job", "logs", str(job["id"])).out == "on the cluster\n"
    # One pilot for one job: the pass that saw it start did not ask for a spare.
    assert requested_pilots(nvq) == 1, requested_pilots(nvq)

    deadline = time.monotonic() + 60
    while done["node"] in nodes(nvq):
        assert time.monotonic() < deadline, nodes(nvq)
        time.sleep(0.5)
    # Released: scancelled, so Slurm lets the allocation go.
    slurm_cluster.wait_state(done["node"].removeprefix("hpc/"), "")
    history = [
        (e["kind"], e["data"].get("reason"))
        for e in nvq.events()
        if e["kind"].startswith("pilot_") and e["node"] == done["node"]
    ]
    # The test cluster's login and compute node share the pilots' home: no alert.
    assert not [e for e in nvq.events() if e["kind"] == "cluster_refused"]
    assert history == [
        ("pilot_requested", None),
        ("pilot_started", None),
        ("pilot_released", "released: no job needed it"),
    ]


def test_artifacts_come_back_over_the_pilots_link_without_the_login_nodes_disk(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster, slurm_login: SshdNode,
    tmp_path: Path,
) -> None:
    # The login node serves no SFTP, so the only way the queue host can read what the
    # pilot wrote is the pilot runner's own link (srun --overlap through the login).
    slurm_login.without_sftp()
    nvq = cluster_queue()
    script = (
        'head -c 5000000 /dev/urandom > "$NVQ_ARTIFACTS/model.bin" && '
        'mkdir "$NVQ_ARTIFACTS/sub" && echo done > "$NVQ_ARTIFACTS/sub/note.txt"'
    )
    job = nvq.submit("--gpus", pilot_gpus(slurm_cluster), "--timeout", "2m", "--", "sh", "-c", script)
    code, [done] = nvq.wait(job["id"], timeout=120)
    assert (code, done["state"]) == (0, "completed"), done
    written = next((tmp_path / "pilots").glob(f"*/jobs/*-{job['id']}-*/artifacts/model.bin"))

    def synced() -> list[str]:
        return sorted(f["path"] for f in nvq.json("job", "artifacts", str(job["id"]))["files"])

    deadline = time.monotonic() + 60  # the final sync follows the exit by a moment
    while synced() != ["model.bin", "sub/note.txt"]:
        assert time.monotonic() < deadline, synced()
        time.sleep(0.5)
    dest = tmp_path / "got"
    nvq.json("job", "artifacts", str(job["id"]), "--get", str(dest))
    assert (dest / "model.bin").read_bytes() == written.read_bytes()
    assert (dest / "sub" / "note.txt").read_text() == "done\n"


def test_exec_and_forward_reach_a_job_on_a_pilot_through_a_slurm_step(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue()
    job = nvq.submit("--gpus", pilot_gpus(slurm_cluster), "--timeout", "5m", "--",
                     "python3 -u -m http.server --bind 127.0.0.1 $NVQ_PORT")
    logs_until(nvq, job["id"], "Serving HTTP")
    shown = nvq.show(job["id"])
    pilot = shown["node"].removeprefix("hpc/")
    # The shell has the job's world; its parent (nvq_runner pty-exec) is a step that
    # srun started inside the pilot's allocation, not a process of the login node.
    r = nvq.run("job", "exec", str(job["id"]), "--", "sh", "-c",
                'echo "job $NVQ_JOB_ID slurm $SLURM_JOB_ID"; '
                "tr '\\0' '\\n' < /proc/$PPID/environ | grep '^SLURM_STEP_ID='; exit 4")
    assert r.code == 4, r.err
    assert f"job {job['id']} slurm {pilot}" in r.out, r.out
    assert "SLURM_STEP_ID=" in r.out, r.out
    fwd = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "forward", str(job["id"]), "--json"],
        env=nvq.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert fwd.stdout is not None
        doc = first_json(fwd.stdout)
        with urllib.request.urlopen(doc["url"], timeout=30) as resp:
            assert b"Directory listing" in resp.read()
    finally:
        fwd.send_signal(signal.SIGINT)
        assert fwd.wait(timeout=30) == 0
    assert nvq.show(job["id"])["state"] == "running"
    nvq.ok("job", "cancel", str(job["id"]))


def requested_pilots(nvq: Nvq) -> int:
    log = (nvq.home / "daemon.log").read_text()
    return sum(1 for line in log.splitlines() if "cluster hpc: requested pilot" in line)


def test_a_job_within_scale_after_asks_slurm_for_nothing(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue(scale_after=toml_str("1h"))
    job = nvq.submit("--gpus", pilot_gpus(slurm_cluster), "--timeout", "2m", "--", "true")

    def seen() -> bool:
        [view] = nvq.json("cluster", "status", "hpc")["clusters"]
        return bool(view["waiting"] == 1)

    # The pass that saw the job waiting did not count it: it has waited seconds, not 1h.
    wait_until("a pass of the pilot manager that sees the job", seen)
    [view] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert (view["pilots"], view["demand"]) == ([], 0), view
    assert 3000 < view["request_in"] <= 3600
    assert requested_pilots(nvq) == 0
    assert nvq.show(job["id"])["state"] == "pending"
    # in words: "59m58s", or "1h00m" when the pass was under a second ago
    assert re.search(r"the next asks for one in (5\dm\d\ds|1h00m): scale_after",
                     nvq.ok("cluster", "status", "hpc").out)


def test_a_job_too_long_for_the_pilot_says_walltime(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue(idle_release=toml_str("10m"))
    gpus = pilot_gpus(slurm_cluster)
    first = nvq.submit("--gpus", gpus, "--timeout", "1m", "--", "true")
    code, [done] = nvq.wait(first["id"], timeout=120)
    assert code == 0, done
    # The pilot stays (idle_release 10m) with less than 10m left: a 9m30s job cannot
    # go there, and says so instead of "jobs ahead of it are placed first".
    long = nvq.submit("--gpus", gpus, "--timeout", "9m30s", "--", "true")
    why = nvq.wait_for(long["id"], lambda j: j.get("reason") == "Walltime", timeout=60)
    assert done["node"] in why["reason_detail"] and "left, the job needs 10m30s" in why[
        "reason_detail"
    ], why


def wait_until(what: str, check: object, timeout: float = 90) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def test_scancel_of_a_running_pilot_reassigns_its_job(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue()
    gpus = pilot_gpus(slurm_cluster)
    job = nvq.submit("--gpus", gpus, "--timeout", "5m", "--", "sleep", "300")
    first = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=90)["node"]
    assert first.startswith("hpc/")
    # Where it runs and the time its allocation has left (`time = "10m"`).
    [pilot] = [n for n in nvq.json("queue", "nodes")["nodes"] if n["name"] == first]
    assert (pilot["cluster"], pilot["host"]) == ("hpc", slurm_cluster.host)
    assert 0 < pilot["time_left"] <= 600
    row = next(line for line in nvq.ok("queue", "nodes").out.splitlines() if first in line)
    assert f"up ({slurm_cluster.host}, " in row and " left)" in row
    [status] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert [(p["node"], p["state"]) for p in status["pilots"]] == [(first, "RUNNING")]

    slurm_cluster.run("scancel", first.removeprefix("hpc/"))
    again = nvq.wait_for(
        job["id"],
        lambda j: j["state"] == "running" and j["node"] != first,
        timeout=90,
    )
    assert again["node"].startswith("hpc/")
    reassigned = [e for e in nvq.events() if e["kind"] == "job_reassigned"]
    assert [(e["job_id"], e["node"]) for e in reassigned] == [(job["id"], first)]
    # Whichever noticed first: the link (node_grace) or squeue (the allocation ended).
    assert first in reassigned[0]["data"]["reason"]


def test_refused_pilot_raises_one_alert_and_no_retry_storm(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue(partition=toml_str("nosuch"))
    job = nvq.submit("--gpus", "0", "--timeout", "1m", "--", "true")

    def refused() -> list[dict[str, object]]:
        # `queue alerts` exits 1 while alerts are open.
        alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
        return [a for a in alerts if a["kind"] == "cluster_refused"]

    wait_until("the refusal alert", refused)
    for _ in range(3):  # later passes, with the job still waiting, add nothing
        nvq.ok("job", "submit", "--gpus", "0", "--timeout", "1m", "--", "true")
        time.sleep(1)
    [alert] = refused()
    assert "Invalid partition name specified" in str(alert["message"])
    assert "nvq cluster retry hpc" in str(alert["message"])
    assert nvq.show(job["id"])["state"] == "pending"
    assert slurm_cluster.run("squeue", "-h", "-o", "%i").stdout.strip() == ""
    [status] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert "Invalid partition name specified" in status["refused"]
    assert "requests stopped: " in nvq.ok("cluster", "status").out

    # `cluster retry` asks Slurm again: the same refusal is the same open alert.
    assert nvq.json("cluster", "retry", "hpc")["refused"] is None
    wait_until("the refusal again", lambda: nvq.json("cluster", "status")["clusters"][0]["refused"])
    assert len(refused()) == 1


def test_restarted_daemon_adopts_the_running_pilot(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue()
    gpus = pilot_gpus(slurm_cluster)
    job = nvq.submit("--gpus", gpus, "--timeout", "5m", "--", "sleep", "8")
    node = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=90)["node"]

    nvq.ok("daemon", "stop")  # the next command starts a new one
    code, [done] = nvq.wait(job["id"], timeout=90)
    assert (code, done["state"], done["node"]) == (0, "completed", node)
    assert done["attempt"] == 1


def test_untimed_job_leaves_a_pilot_before_its_end_for_a_new_one(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    # A two-minute allocation that untimed jobs must leave with 110 s to go: a
    # job placed at once runs about ten seconds there.
    nvq = cluster_queue(
        allow_untimed="true",
        max_pilots="2",
        time=toml_str("2m"),
        vacate_before=toml_str("110s"),
    )
    gpus = pilot_gpus(slurm_cluster)
    # Each attempt counts itself in a checkpoint under $NVQ_ARTIFACTS, and says so.
    ledger = tmp_path / "ledger"
    body = (
        'ck="$NVQ_ARTIFACTS/attempts"; n=$(cat "$ck" 2>/dev/null || echo 0); '
        f'echo $((n+1)) > "$ck"; echo "$NVQ_NODE $((n+1))" >> {ledger}; sleep 300'
    )
    job = nvq.submit("--gpus", gpus, "--", body)
    first = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=90)["node"]
    again = nvq.wait_for(
        job["id"],
        lambda j: j["state"] == "running" and j["node"] != first,
        timeout=120,
    )
    assert again["node"].startswith("hpc/")
    wait_until("the second attempt", lambda: len(ledger.read_text().splitlines()) >= 2)
    # The second attempt started from the first one's checkpoint.
    assert ledger.read_text().splitlines()[:2] == [f"{first} 1", f"{again['node']} 2"]
    # The first move; a busy machine may already have seen the next pilot's end too.
    moved = next(e for e in nvq.events() if e["kind"] == "job_preempted")
    assert (moved["job_id"], moved["node"]) == (job["id"], first)
    assert moved["data"]["reason"].startswith(f"the Slurm allocation of {first} ends in ")
    nvq.ok("job", "cancel", str(job["id"]))


def test_requested_pilot_shows_slurms_reason_and_goes_when_not_needed(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    # A pilot Slurm holds back for an hour: it stays requested.
    nvq = cluster_queue(sbatch_args='["--begin=now+1hour"]')
    job = nvq.submit("--gpus", "0", "--timeout", "1m", "--", "true")
    wait_until("a requested pilot", lambda: any(n.startswith("hpc/") for n in nodes(nvq)))
    [(name, state)] = nodes(nvq).items()
    assert state == "requested: PENDING (BeginTime)"
    row = next(line for line in nvq.ok("queue", "nodes").out.splitlines() if name in line)
    assert row.split()[:4] == [name, "requested:", "PENDING", "(BeginTime)"]

    nvq.ok("job", "cancel", str(job["id"]))  # nothing waits any more
    wait_until("the pilot to go", lambda: not nodes(nvq))
    slurm_cluster.wait_state(name.removeprefix("hpc/"), "")


def test_scale_keeps_pilots_and_drain_releases_them(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    nvq = cluster_queue(idle_release=toml_str("10m"))
    assert nvq.json("cluster", "scale", "hpc", "1")["target"] == 1
    wait_until("a pilot with no job for it", lambda: "up" in nodes(nvq).values())
    [name] = nodes(nvq)

    assert nvq.json("cluster", "drain", "hpc")["target"] == 0
    wait_until("the pilot to go", lambda: not nodes(nvq))
    slurm_cluster.wait_state(name.removeprefix("hpc/"), "")
    assert "pilots draining" in nvq.ok("cluster", "status", "hpc").out
    assert nvq.json("cluster", "scale", "hpc", "auto")["target"] is None
    assert "no cluster named 'nosuch'" in nvq.run("cluster", "status", "nosuch").err


def test_a_pilot_offers_only_the_cards_slurm_granted_and_its_jobs_see_the_allocation(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    if slurm_cluster.gpus < 2:
        pytest.skip("this Slurm has no fake GRES GPUs (device nodes cannot be made here)")
    # Card 0 is another Slurm job's: the pilot is granted card 1 of the two its NVML
    # (the fake backend here) sees, and must not use card 0.
    other = slurm_cluster.run(
        "sbatch", "--parsable", "--gres=gpu:1", "--wrap", "sleep 300"
    ).stdout.strip()
    slurm_cluster.wait_state(other, "RUNNING")
    nvq = cluster_queue(idle_release=toml_str("10m"))  # still there for `queue nodes`
    (tmp_path / "pilot-gpus.toml").write_text(
        'cuda = "12.4"\n[[gpu]]\nname = "A100"\nmemory = "80GiB"\n'
        '[[gpu]]\nname = "A100"\nmemory = "80GiB"\n'
    )
    job = nvq.submit(
        "--gpus", "1", "--timeout", "2m", "--", "sh", "-c",
        'echo "$CUDA_VISIBLE_DEVICES $SLURM_JOB_ID $SLURM_JOB_GPUS"',
    )
    code, [done] = nvq.wait(job["id"], timeout=120)
    assert code == 0, done
    pilot_id = done["node"].removeprefix("hpc/")
    assert nvq.ok("job", "logs", str(job["id"])).out == f"1 {pilot_id} 1\n"
    # Card 0 is not off for a reason of the queue's: `queue nodes` says whose it is.
    shown = nvq.ok("queue", "nodes").out
    assert f"  {done['node']}:0 outside its Slurm allocation" in shown, shown
    assert "(not allocated)" in shown and "(off)" not in shown, shown
    slurm_cluster.run("scancel", other)


def login_python_is_new_enough() -> bool:
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    code = "import sys; sys.exit(sys.version_info < (3, 11))"
    return bool(found) and subprocess.run([str(found), "-c", code], check=False).returncode == 0


def test_nvq_installs_the_pilots_runner_itself_with_no_home_shared_with_the_login_node(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster, slurm_login: SshdNode,
    tmp_path: Path,
) -> None:
    if not login_python_is_new_enough():
        pytest.skip("the login node's python3 is older than 3.11: bootstrap would refuse it")
    # The login node sees its own empty `home`: what it installs there the compute node
    # (this host's real file system) never sees, and the reverse.
    slurm_login.without_sharing(tmp_path / "pilots")
    # No `python` in the table: nvq installs this version's runner under <home>/runner.
    # The pilot stays after the job, for the pull below.
    nvq = cluster_queue(python=toml_str("python3"), idle_release=toml_str("10m"))
    job = nvq.submit("--gpus", pilot_gpus(slurm_cluster), "--timeout", "2m", "--", "sh", "-c",
                     'echo art > "$NVQ_ARTIFACTS/a.txt"')
    code, [done] = nvq.wait(job["id"], timeout=180)
    assert code == 0, done
    log = (nvq.home / "daemon.log").read_text()
    assert f"cluster hpc: installed nvq_runner {nvq_version} for its pilots" in log
    # The compute node installed it from the copy in its batch script.
    installed = json.loads((tmp_path / "pilots" / "runner" / "venv" / "nvq-build.json").read_text())
    assert installed["version"] == nvq_version
    out = next((tmp_path / "pilots").glob("*/pilot.log")).read_text()
    assert "NVQ-INSTALLED" in out, out
    # Its artifacts came back all the same, and the log says job pull cannot reach it.
    dest = tmp_path / "got"
    deadline = time.monotonic() + 60  # the final sync follows the exit by a moment
    while not (dest / "a.txt").exists():
        assert time.monotonic() < deadline, nvq.json("job", "artifacts", str(job["id"]))
        nvq.json("job", "artifacts", str(job["id"]), "--get", str(dest))
        time.sleep(0.5)
    assert (dest / "a.txt").read_text() == "art\n"
    # job pull reads the compute node's disk through a step of the pilot's allocation.
    back = tmp_path / "back"
    doc = nvq.json("job", "pull", str(job["id"]), "--to", str(back))
    assert doc["paths"] == ["artifacts", "work"], doc
    assert (back / "artifacts" / "a.txt").read_text() == "art\n"
    missing = nvq.run("job", "pull", str(job["id"]), "nope.txt", "--to", str(tmp_path / "x"))
    assert missing.code != 0 and "nope.txt" in missing.err and not (tmp_path / "x").exists()


def test_a_pilot_running_another_runner_version_is_refused_with_one_alert(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    # A site-managed `python` whose nvq_runner is an older release.
    old = tmp_path / "old-runner"
    old.mkdir()
    (old / "sitecustomize.py").write_text("import nvq_runner\nnvq_runner.__version__ = '0.0.1'\n")
    python = tmp_path / "old-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={old} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    nvq = cluster_queue(python=toml_str(python))
    job = nvq.submit("--gpus", pilot_gpus(slurm_cluster), "--timeout", "2m", "--", "true")

    def refused() -> bool:
        return any(e["kind"] == "cluster_refused" for e in nvq.events())

    wait_until("the pilot's refusal", refused)
    [alert] = [e for e in nvq.events() if e["kind"] == "cluster_refused"]
    assert f"runs nvq_runner 0.0.1, this queue runs {nvq_version}" in alert["data"]["message"]
    assert nvq.show(job["id"])["state"] == "pending"
    [view] = nvq.json("cluster", "status", "hpc")["clusters"]
    assert "0.0.1" in view["refused"]
    ended = [e for e in nvq.events() if e["kind"] == "pilot_released"]
    assert len(ended) == 1 and "0.0.1" in ended[0]["data"]["reason"]


def _saved_grant(nvq: Nvq, node: str) -> float:
    """The lease queue.db records as granted to `node` (0: none)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{nvq.home / 'queue.db'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'lease_grants'").fetchone()
    finally:
        conn.close()
    return float(json.loads(row[0]).get(node, (0.0, 0.0))[0]) if row else 0.0


def test_a_planned_stop_grants_a_pilot_max_downtime_and_the_next_daemon_adopts_it(
    cluster_queue: ClusterQueue, slurm_cluster: SlurmCluster
) -> None:
    """`daemon stop` records max_downtime granted to the pilot's runner (the next
    daemon claims it when it adopts the pilot: nvq.daemon.machines.lease_grants.claim), and the
    job goes on there. Once the runner echoes the new daemon's own lease, the long one
    is superseded, so it is checked right after the stop."""
    nvq = cluster_queue()
    config = (nvq.home / "config.toml").read_text()
    nvq.write_config(config.replace('node_grace = "2s"\nlease = "off"', 'node_grace = "30s"'))
    gpus = pilot_gpus(slurm_cluster)
    job = nvq.submit("--gpus", gpus, "--timeout", "5m", "--", "sleep", "10")
    node = nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=90)["node"]

    stopped_at = time.time()
    nvq.ok("daemon", "stop")
    assert _saved_grant(nvq, node) >= stopped_at + 3600  # max_downtime, 1h by default
    code, [done] = nvq.wait(job["id"], timeout=90)  # a new daemon adopts the pilot
    assert (code, done["node"], done["attempt"]) == (0, node, 1)
