"""Machines that come and go, through the real CLI on sshd nodes with fake GPUs: a
node that dies mid-job, one that comes back with the old process alive, busy
workstations, --no-reassign, and the artifacts quota."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq, kill_processes_under, make_nvq, write_mesh_config
from tests.daemon.test_ssh_nodes import ONE_CARD, _alive, _node_state, _until
from tests.harness.sshd import SshdNode

FAST_SYNC = 'artifact_sync = "1s"'


@pytest.fixture
def mesh(tmp_path: Path, sshd_nodes: Any) -> Any:
    made: list[Nvq] = []

    def build(
        n: int, owners: dict[int, str] | None = None, **kwargs: Any
    ) -> tuple[Nvq, list[SshdNode]]:
        nodes = sshd_nodes(n)
        nvq = make_nvq(tmp_path / f"q{len(made)}")
        write_mesh_config(nvq, nodes, **kwargs)
        if owners:
            config = nvq.home / "config.toml"
            text = config.read_text()
            for i, owner in owners.items():
                text = text.replace(f'name = "n{i}"\n', f'name = "n{i}"\nowner = "{owner}"\n')
            config.write_text(text)
        made.append(nvq)
        return nvq, nodes

    yield build
    for nvq in made:
        nvq.shutdown()


def _index(name: str) -> int:
    return int(name.removeprefix("n"))


def _die(node: SshdNode) -> None:
    """The machine dies: sshd, the runner and every job process on it."""
    node.kill_all()
    pid_file = node.home / "runner.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    kill_processes_under(node.home)


# A training loop that checkpoints its step in $NVQ_ARTIFACTS (write, then rename) and
# resumes from it: each step it runs is logged with the node it ran on. From step 12 on
# it goes only once {release} exists, so it cannot finish before its node is killed,
# however loaded the machine.
STEPS = 40
TRAIN = (
    'ck="$NVQ_ARTIFACTS/step"; s=$(cat "$ck" 2>/dev/null || echo 0); '
    f"while [ $s -lt {STEPS} ]; do s=$((s+1)); "
    'echo "$NVQ_NODE $s" >> {ledger}; echo $s > "$ck.tmp"; mv "$ck.tmp" "$ck"; '
    "while [ $s -ge 12 ] && [ ! -e {release} ]; do sleep 0.1; done; "
    "sleep 0.15; done"
)


def test_node_dies_mid_job_and_the_job_resumes_from_its_checkpoint(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD, queue_extra=FAST_SYNC)
    ledger = tmp_path / "ledger"
    release = tmp_path / "release"
    job = nvq.submit("--vram", "20GiB", "--", TRAIN.format(ledger=ledger, release=release))
    run = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
    first = run["node"]
    stored = nvq.home / "artifacts" / str(job["id"]) / "step"

    def synced() -> int:
        """The step in the queue host's copy (`job artifacts` checks it out)."""
        nvq.json("job", "artifacts", str(job["id"]))
        return int(stored.read_text() or 0) if stored.exists() else 0

    _until(lambda: synced() >= 8, what="a sync")
    _die(nodes[_index(first)])
    synced_at_death = synced()
    ran_before = [int(ln.split()[1]) for ln in ledger.read_text().splitlines()]
    release.touch()
    code, (done,) = nvq.wait(job["id"], timeout=90)
    assert code == 0 and done["state"] == "completed"
    assert done["node"] != first
    steps = [ln.split() for ln in ledger.read_text().splitlines()]
    after = [int(s) for n, s in steps if n != first]
    # The new attempt started from the stored checkpoint: nothing before the last sync
    # was redone, and only steps after it (at most) were.
    assert after[0] == synced_at_death + 1
    assert synced_at_death <= max(ran_before)
    assert after[-1] == STEPS
    assert set(range(1, STEPS + 1)) <= {int(s) for _, s in steps}
    shown = nvq.show(job["id"])
    outcomes = [(a["node"], a["outcome"]) for a in shown["attempts"]]
    assert outcomes == [(first, "reassigned"), (done["node"], "completed")]
    kinds = [e["kind"] for e in shown["events"]]
    assert "job_reassigned" in kinds
    # The final sync (at exit) follows the exit event by a moment.
    _until(lambda: synced() == STEPS, what="the final sync")
    listed = nvq.json("job", "artifacts", str(job["id"]))
    assert [f["path"] for f in listed["files"]] == ["step"]
    dest = tmp_path / "got"
    nvq.json("job", "artifacts", str(job["id"]), "--get", str(dest))
    assert (dest / "step").read_text().strip() == str(STEPS)
    bad = nvq.run("job", "artifacts", "999")
    assert bad.code != 0 and "no job with id 999" in bad.err


def test_dead_node_returns_with_the_old_process_alive_and_it_is_killed(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    body = (
        f"echo $$ > {tmp_path}/pid.$NVQ_ATTEMPT; "
        f"while [ ! -e {tmp_path}/gate.$NVQ_ATTEMPT ]; do sleep 0.05; done"
    )
    job = nvq.submit("--vram", "20GiB", "--", body)
    run = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
    first = run["node"]
    nodes[_index(first)].kill_all()  # unreachable; its runner and the job live on
    old_pid = int((tmp_path / "pid.1").read_text())
    moved = nvq.wait_for(
        job["id"], lambda j: j["state"] == "running" and j["node"] != first, timeout=60
    )
    assert moved["attempt"] == 2
    assert _alive(old_pid)  # nobody could reach it
    (tmp_path / "gate.2").touch()
    code, (done,) = nvq.wait(job["id"], timeout=60)
    assert code == 0 and done["state"] == "completed"
    nodes[_index(first)].start()
    _until(lambda: not _alive(old_pid), timeout=30, what="the old attempt to be killed")
    _until(lambda: nvq.json("queue", "status")["pending_reaps"] == 0, what="reap settled")
    shown = nvq.show(job["id"])
    assert [a["outcome"] for a in shown["attempts"]] == ["reassigned", "completed"]
    assert shown["state"] == "completed"
    assert _node_state(nvq, first)["state"] == "up"


def test_busy_node_moves_a_foreign_job_and_keeps_the_owners(mesh: Any, tmp_path: Path) -> None:
    # Tests submit as root: n0 is root's own workstation, n1 is alice's.
    nvq, _ = mesh(3, gpus=ONE_CARD, owners={0: "root", 1: "alice"})
    nvq.ok("queue", "status")
    _until(lambda: all(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]), what="nodes up")
    nvq.ok("queue", "drain", "n2")
    gate = tmp_path / "gate"
    body = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    jobs = [nvq.submit("--vram", "20GiB", "--", body) for _ in range(2)]
    running = [nvq.wait_for(j["id"], lambda x: x["state"] == "running") for j in jobs]
    on = {r["node"]: r["id"] for r in running}
    assert set(on) == {"n0", "n1"}
    nvq.ok("queue", "resume", "n2")
    busy = nvq.json("queue", "busy", "n1", "on")
    assert busy["busy"] is True and busy["owner"] == "alice"
    moved = nvq.wait_for(on["n1"], lambda x: x["state"] == "running" and x["node"] == "n2")
    assert moved["attempt"] == 2
    nvq.ok("queue", "busy", "n0", "on")  # root's own node, root's own job: it stays
    kept = nvq.show(on["n0"])
    assert kept["state"] == "running" and kept["node"] == "n0" and kept["attempt"] == 1
    kinds = [e["kind"] for e in nvq.show(on["n1"])["events"]]
    assert "job_preempted" in kinds
    assert nvq.show(on["n1"])["attempts"][0]["outcome"] == "preempted"
    # Foreign jobs are not placed on a busy node; the owner's still are, unless forbidden.
    nvq.ok("queue", "forbid-busy-assign")
    gate.touch()
    nvq.wait(on["n0"], on["n1"])
    mine = nvq.submit("--node", "n0", "--", "true")
    assert nvq.wait(mine["id"], timeout=2)[0] == 2  # still waiting: forbidden
    assert nvq.show(mine["id"])["state"] == "pending"
    nvq.ok("queue", "allow-busy-assign")
    code, (done,) = nvq.wait(mine["id"])
    assert code == 0 and done["node"] == "n0"
    foreign = nvq.submit("--node", "n1", "--", "true")
    assert nvq.wait(foreign["id"], timeout=2)[0] == 2  # still waiting: n1 is alice's, busy
    nvq.ok("queue", "busy", "n1", "auto")  # nobody is logged in: idle
    assert nvq.wait(foreign["id"])[0] == 0
    bad = nvq.run("queue", "busy", "n1", "sometimes")
    assert bad.code == 2 and "expected on, off or auto" in bad.err


def test_no_reassign_job_is_lost_with_an_alert(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    job = nvq.submit("--no-reassign", "--", f"echo once >> {tmp_path}/ran; sleep 300")
    run = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
    _die(nodes[_index(run["node"])])
    code, (done,) = nvq.wait(job["id"], timeout=60)
    assert code == 1 and done["state"] == "lost" and "--no-reassign" in done["reason"]
    alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
    assert any(a["kind"] == "job_lost" and a["job_id"] == job["id"] for a in alerts)
    assert (tmp_path / "ran").read_text().split() == ["once"]


def test_artifact_quota_refuses_the_sync_with_an_alert(mesh: Any) -> None:
    nvq, _ = mesh(1, queue_extra=FAST_SYNC + '\nartifacts_quota = "1MiB"')
    body = 'head -c 2097152 /dev/zero > "$NVQ_ARTIFACTS/big"; sleep 3'
    job = nvq.submit("--gpus", "0", "--", body)
    assert nvq.wait(job["id"], timeout=60)[0] == 0

    def quota_alerts() -> list[Any]:
        alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]
        return [a for a in alerts if a["kind"] == "artifacts_quota"]

    _until(lambda: bool(quota_alerts()), what="the quota alert")
    assert quota_alerts()[0]["job_id"] == job["id"]
    assert nvq.json("job", "artifacts", str(job["id"]))["files"] == []
