"""Outages through the real CLI on sshd nodes: an exit the runner recorded always wins
over what the daemon guessed while the node was away, and a node removed from the
config while its job runs leaves no job running forever."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.cluster import Nvq, write_mesh_config
from tests.daemon import test_ssh_nodes
from tests.daemon.test_ssh_nodes import ONE_CARD, _until

mesh = test_ssh_nodes.mesh  # the fixture, shared with the other sshd-node tests


def test_a_no_reassign_job_that_completed_while_its_node_was_away_completes(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(1, gpus=ONE_CARD)
    gate = tmp_path / "gate"
    body = (
        f"while [ ! -e {gate} ]; do sleep 0.05; done; "
        'echo \'{"acc": 0.9}\' > "$NVQ_JOB_DIR/result.json"'
    )
    job = nvq.submit("--no-reassign", "--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    nodes[0].kill_all()
    nvq.wait_for(job["id"], lambda x: x["state"] == "lost", timeout=30)
    gate.touch()  # it finishes, well, while nobody can see it
    _until(lambda: _exit_recorded(nodes[0].home, job["id"]), what="the job's exit record")
    nodes[0].start()
    done = nvq.wait_for(job["id"], lambda x: x["state"] != "lost", timeout=60)
    assert done["state"] == "completed" and done["exit_code"] == 0
    assert nvq.json("job", "result", str(job["id"]))["result"] == {"acc": 0.9}


def _exit_recorded(node_home: Path, job_id: int) -> bool:
    """The runner's exit record of `job_id` exists (its directory may carry the queue's
    id and a nonce around the job id)."""
    jobs = node_home / "jobs"
    return any(
        (d / "exit").exists() for d in jobs.glob("*")
        if d.name == str(job_id) or f"-{job_id}-" in d.name
    )


def test_an_attempt_that_ended_before_node_down_ends_the_job(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    ledger, gate, pid2 = tmp_path / "ledger", tmp_path / "gate", tmp_path / "pid2"
    nvq.ok("queue", "drain", "n0")
    body = (
        f"echo $NVQ_ATTEMPT >> {ledger}; "
        f'if [ "$NVQ_ATTEMPT" = 1 ]; then while [ ! -e {gate} ]; do sleep 0.05; done; '
        f"echo ended >> {ledger}; else echo $$ > {pid2}; sleep 60; fi"
    )
    job = nvq.submit("--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    # "running" is told when the process starts; pausing before its shell has run
    # the first line would stop attempt 1 too, and it would never end.
    _until(lambda: ledger.exists() and ledger.read_text().strip() == "1", what="attempt 1 to begin")
    nvq.ok("queue", "resume", "n0")
    nodes[1].pause()  # hung: attempt 1 ends, but nobody hears of it
    gate.touch()
    _until(lambda: "ended" in ledger.read_text(), what="attempt 1 to end")
    # its wrapper records the exit (and when) on the node before the node goes down
    _until(lambda: _exit_recorded(nodes[1].home, job["id"]), what="attempt 1's exit record")
    nodes[1].kill_all()
    # Down past node_grace: attempt 2 starts on n0.
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n0", timeout=60)
    _until(lambda: pid2.exists() and pid2.read_text().strip() != "", what="attempt 2 to run")
    nodes[1].start()
    done = nvq.wait_for(job["id"], lambda x: x["state"] not in ("running", "pending"), timeout=60)
    # Attempt 1 completed before the node was declared down: that is the outcome.
    assert done["state"] == "completed" and done["exit_code"] == 0, done
    assert [(a["attempt"], a["node"], a["outcome"]) for a in done["attempts"]] == [
        (1, "n1", "completed"),
        (2, "n0", "superseded"),
    ]
    why = [e["data"]["reason"] for e in done["events"] if e["kind"] == "attempt_superseded"]
    assert why == ["attempt 1 on n1 ran to its end first: its outcome stands"]
    _until(lambda: not _alive(int(pid2.read_text())), what="attempt 2 to be killed")
    assert ledger.read_text().split() == ["1", "ended", "2"]  # no third attempt


def test_both_real_exits_are_kept_whichever_is_heard_first(mesh: Any, tmp_path: Path) -> None:
    """Job 2576 of the soak: attempt 1 exits 0 on a node that dropped off, attempt 2
    exits 2 elsewhere and is heard first. When attempt 1's exit arrives, it stands
    (it ended first, by its node's clock) and attempt 2's exit is kept, superseded."""
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    nvq.ok("queue", "drain", "n0")
    body = (
        f"echo $NVQ_ATTEMPT >> {ledger}; "
        f'if [ "$NVQ_ATTEMPT" = 1 ]; then while [ ! -e {gate} ]; do sleep 0.05; done; '
        f"echo ended >> {ledger}; exit 0; else exit 2; fi"
    )
    job = nvq.submit("--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    _until(lambda: ledger.exists() and ledger.read_text().strip() == "1", what="attempt 1 to begin")
    nvq.ok("queue", "resume", "n0")
    nodes[1].pause()  # hung: attempt 1 ends, but nobody hears of it
    gate.touch()
    _until(lambda: "ended" in ledger.read_text(), what="attempt 1 to end")
    nodes[1].kill_all()
    # Down past node_grace: attempt 2 runs on n0, exits 2, and is heard at once.
    failed = nvq.wait_for(job["id"], lambda x: x["state"] == "failed", timeout=60)
    assert (failed["node"], failed["exit_code"]) == ("n0", 2)
    nodes[1].start()
    done = nvq.wait_for(job["id"], lambda x: x["state"] != "failed", timeout=60)
    assert (done["state"], done["exit_code"], done["node"]) == ("completed", 0, "n1"), done
    got = [(a["attempt"], a["node"], a["outcome"], a["exit_code"]) for a in done["attempts"]]
    assert got == [(1, "n1", "completed", 0), (2, "n0", "superseded", 2)]
    why = [e["data"] for e in done["events"] if e["kind"] == "attempt_superseded"]
    assert [(d["attempt"], d["by_attempt"], d["exit_code"]) for d in why] == [(2, 1, 2)]
    assert ledger.read_text().split() == ["1", "ended", "2"]  # no third attempt


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_job_on_a_node_removed_from_config_is_accounted_for(nvq: Nvq, sshd_nodes: Any) -> None:
    nodes = sshd_nodes(2)
    write_mesh_config(nvq, nodes)
    job = nvq.submit("--node", "n1", "--gpus", "0", "--", "sleep", "60")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=60)
    write_mesh_config(nvq, nodes[:1])
    nvq.ok("daemon", "stop")
    got = nvq.wait_for(job["id"], lambda j: j["state"] in ("lost", "pending"), timeout=60)
    alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
    assert any("n1" in a["message"] and "config" in a["message"] for a in alerts), (got, alerts)
