"""The SSH mesh, through the real CLI: a daemon with no local node, runners on real
OpenSSH sshd nodes on loopback, and the faults a queue of workstations lives through."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode

ONE_CARD = 'cuda = "13.0"\n[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n'
PY = sys.executable


@pytest.fixture
def mesh(tmp_path: Path, sshd_nodes: Any) -> Any:
    made: list[Nvq] = []

    def build(n: int, **kwargs: Any) -> tuple[Nvq, list[SshdNode]]:
        nodes = sshd_nodes(n)
        nvq = make_nvq(tmp_path / f"q{len(made)}")
        write_mesh_config(nvq, nodes, **kwargs)
        made.append(nvq)
        return nvq, nodes

    yield build
    for nvq in made:
        nvq.shutdown()


def _ledger_job(ledger: Path, body: str = "true") -> str:
    """A job body that records each run of itself: a job that ran twice shows twice."""
    return f"echo $NVQ_JOB_ID >> {ledger}; {body}"


def _runs(ledger: Path) -> Counter[int]:
    if not ledger.exists():
        return Counter()
    return Counter(int(x) for x in ledger.read_text().split())


def _node_state(nvq: Nvq, name: str) -> dict[str, Any]:
    status = nvq.json("queue", "status")
    return next(n for n in status["nodes"] if n["name"] == name)


def _until(pred: Any, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_queue_spreads_over_three_nodes_and_completes(mesh: Any, tmp_path: Path) -> None:
    nvq, _ = mesh(3, gpus=ONE_CARD)
    nvq.ok("queue", "status")
    # all three must be up before the burst, or the first two take every job
    _until(lambda: all(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]), what="nodes up")
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    body = _ledger_job(ledger, f"while [ ! -e {gate} ]; do sleep 0.05; done")
    # each card holds one 20 GiB job: the first three run on three nodes, the rest wait
    jobs = [nvq.submit("--vram", "20GiB", "--", body) for _ in range(9)]
    _until(lambda: len(_runs(ledger)) == 3, what="three jobs running")
    gate.touch()
    code, done = nvq.wait(*(j["id"] for j in jobs), timeout=90)
    assert code == 0
    assert {j["node"] for j in done} == {"n0", "n1", "n2"}
    assert _runs(ledger) == Counter({j["id"]: 1 for j in jobs})
    nodes = nvq.json("queue", "nodes")["nodes"]
    assert [n["state"] for n in nodes] == ["up", "up", "up"]
    assert all(n["gpus"][0]["mem_total_mb"] == 24576 for n in nodes)


def test_daemon_kill_9_mid_run(mesh: Any, tmp_path: Path) -> None:
    nvq, _ = mesh(3)
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    body = f"while [ ! -e {gate} ]; do sleep 0.05; done; exit $((NVQ_JOB_ID % 3))"
    jobs = [nvq.submit("--", _ledger_job(ledger, body)) for _ in range(6)]
    for j in jobs:
        nvq.wait_for(j["id"], lambda x: x["state"] == "running" and x["started_at"])
    os.kill(_daemon_pid(nvq), signal.SIGKILL)
    gate.touch()  # every job ends while no daemon runs
    time.sleep(1)
    code, done = nvq.wait(*(j["id"] for j in jobs), timeout=60)  # starts a new daemon
    assert code == 1
    for j in done:
        want = j["id"] % 3
        assert j["exit_code"] == want
        assert j["state"] == ("completed" if want == 0 else "failed")
    assert _runs(ledger) == Counter({j["id"]: 1 for j in jobs})
    for j in jobs:
        kinds = [e["kind"] for e in nvq.show(j["id"])["events"]]
        assert kinds.count("job_started") == 1, kinds


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.3])
def test_daemon_kill_9_mid_dispatch(mesh: Any, tmp_path: Path, delay: float) -> None:
    nvq, _ = mesh(2)
    nvq.ok("queue", "status")  # daemon up and nodes connected before the burst
    _until(lambda: all(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]), what="nodes up")
    ledger = tmp_path / "ledger"
    jobs = [nvq.submit("--gpus", "0", "--", _ledger_job(ledger, "sleep 0.2")) for _ in range(8)]
    time.sleep(delay)
    os.kill(_daemon_pid(nvq), signal.SIGKILL)
    code, done = nvq.wait(*(j["id"] for j in jobs), timeout=90)
    assert code == 0, done
    assert _runs(ledger) == Counter({j["id"]: 1 for j in jobs}), "a job ran twice or never"


def test_runner_kill_9_keeps_jobs_and_their_exit_codes(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(1)
    gate = tmp_path / "gate"
    job = nvq.submit("--", f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 5")
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    runner_pid = int((nodes[0].home / "runner.pid").read_text())
    os.kill(runner_pid, signal.SIGKILL)
    time.sleep(1.0)
    assert nvq.show(job["id"])["state"] == "running"  # not reported lost while alive
    gate.touch()
    code, (done,) = nvq.wait(job["id"], timeout=60)
    assert code == 1 and done["state"] == "failed" and done["exit_code"] == 5
    new_pid = int((nodes[0].home / "runner.pid").read_text())
    assert new_pid != runner_pid
    kinds = [e["kind"] for e in nvq.show(job["id"])["events"]]
    assert "job_lost" not in kinds


def test_node_down_and_back(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    gate, ledger = tmp_path / "gate", tmp_path / "ledger"
    body = _ledger_job(ledger, f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 4")
    job = nvq.submit("--node", "n1", "--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    nodes[1].kill_all()  # sshd and its sessions die; the runner and its job live on
    _until(lambda: _node_state(nvq, "n1")["state"] == "down", what="n1 down")
    assert any(e["kind"] == "node_down" and e["node"] == "n1" for e in nvq.events())
    other = nvq.submit("--", "true")  # the rest of the cluster keeps working
    code, (o,) = nvq.wait(other["id"])
    assert code == 0 and o["node"] == "n0"
    gate.touch()  # the job ends while its node is unreachable
    # Down past node_grace: back to the queue (pinned to n1, it waits for n1 to return).
    waiting = nvq.wait_for(job["id"], lambda x: x["state"] == "pending", timeout=60)
    assert waiting["state"] == "pending" and "reassigned" in waiting["reason_detail"]
    assert waiting["reason"] == "NodeDown"
    nodes[1].start()
    code, (done,) = nvq.wait(job["id"], timeout=60)
    # The attempt that ran on while n1 was away reported its exit: that is the
    # outcome, and the job is not run a second time.
    assert done["state"] == "failed" and done["exit_code"] == 4
    assert _runs(ledger) == Counter({job["id"]: 1})
    assert _node_state(nvq, "n1")["state"] == "up"
    downs = [e for e in nvq.events() if e["kind"] == "node_down" and e["node"] == "n1"]
    assert len(downs) == 1  # raised once per outage


def test_hung_node_is_detected_and_recovers(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(1)
    gate = tmp_path / "gate"
    job = nvq.submit("--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    nodes[0].pause()
    _until(
        lambda: _node_state(nvq, "n0")["state"] in ("connecting", "down"), what="hung node noticed"
    )
    gate.touch()
    nodes[0].resume()
    code, (done,) = nvq.wait(job["id"], timeout=60)
    assert code == 0 and done["state"] == "completed"


def test_changed_host_key_is_refused(mesh: Any) -> None:
    nvq, nodes = mesh(2)
    nodes[1].rotate_host_key()
    job = nvq.submit("--node", "n0", "--", "true")
    assert nvq.wait(job["id"])[0] == 0
    _until(lambda: "host key" in (_node_state(nvq, "n1").get("error") or ""), what="key error")
    n1 = _node_state(nvq, "n1")
    assert n1["state"] != "up"
    pinned = nvq.submit("--node", "n1", "--", "true")
    time.sleep(1.5)
    assert nvq.show(pinned["id"])["state"] == "pending"  # never placed on an untrusted host


def test_cancel_while_node_unreachable_is_carried_out_on_return(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(1)
    pidfile = tmp_path / "pid"
    job = nvq.submit("--", f"echo $$ > {pidfile}; exec sleep 300")
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and pidfile.exists())
    nodes[0].kill_all()
    _until(lambda: _node_state(nvq, "n0")["state"] != "up", what="node unreachable")
    nvq.ok("job", "cancel", str(job["id"]))
    assert nvq.show(job["id"])["state"] == "cancelled"  # recorded at once
    assert nvq.json("queue", "status")["pending_reaps"] == 1
    pid = int(pidfile.read_text())
    assert _alive(pid)  # nobody could reach it yet
    nodes[0].start()
    _until(lambda: not _alive(pid), timeout=30, what="the process to be killed")
    _until(lambda: nvq.json("queue", "status")["pending_reaps"] == 0, what="reap settled")
    assert nvq.show(job["id"])["state"] == "cancelled"
    # The kill owed since the cancel, carried out late, is said: an event and a log line.
    # (reason `cancel`, or `reassigned` when a slow machine let node_grace pass
    # first; again on each reconnect that still finds it running)
    owed = [e["data"] for e in nvq.events() if e["kind"] == "owed_kill"]
    assert owed and all(d["attempt"] == 1 for d in owed), owed
    assert "is still running there; killing it now (owed: " in (
        nvq.home / "daemon.log").read_text()


def test_drain_resume_ignore(mesh: Any, tmp_path: Path) -> None:
    nvq, _ = mesh(2)
    nvq.ok("queue", "status")
    _until(lambda: all(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]), what="nodes up")
    drained = nvq.json("queue", "drain", "n1")
    assert drained["state"] == "draining" and drained["drained"] is True
    jobs = [nvq.submit("--gpus", "0", "--", "true") for _ in range(4)]
    code, done = nvq.wait(*(j["id"] for j in jobs))
    assert code == 0 and {j["node"] for j in done} == {"n0"}
    nvq.ok("queue", "resume", "n1")
    gate = tmp_path / "gate"
    busy = nvq.submit("--node", "n1", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    nvq.wait_for(busy["id"], lambda x: x["state"] == "running")
    refused = nvq.run("queue", "ignore", "n1")
    assert refused.code != 0 and "running jobs" in refused.err
    gate.touch()
    nvq.wait(busy["id"])
    nvq.ok("queue", "ignore", "n1")
    assert [n["name"] for n in nvq.json("queue", "nodes")["nodes"]] == ["n0"]
    hidden = nvq.json("queue", "nodes", "--include-ignored")["nodes"]
    assert [n["state"] for n in hidden] == ["up", "ignored"]
    nvq.ok("queue", "unignore", "n1")
    _until(lambda: _node_state(nvq, "n1")["state"] == "up", what="n1 back")
    bad = nvq.run("queue", "drain", "nosuchnode")
    assert bad.code != 0 and "no node named" in bad.err


def _daemon_pid(nvq: Nvq) -> int:
    return int((nvq.home / "daemon.pid").read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_runner_is_installed_on_first_contact_and_by_bootstrap(mesh: Any) -> None:
    nvq, nodes = mesh(1, managed_runner=True)  # no `python`: nvq installs its own venv
    job = nvq.submit("--gpus", "0", "--", "true")
    code, _ = nvq.wait(job["id"], timeout=120)
    assert code == 0
    venv_python = nodes[0].home / "venv" / "bin" / "python"
    assert venv_python.exists()
    runner_cmd = Path(f"/proc/{int((nodes[0].home / 'runner.pid').read_text())}/cmdline")
    assert str(venv_python) in runner_cmd.read_bytes().replace(b"\0", b" ").decode()
    again = nvq.json("node", "bootstrap", "n0")
    assert again["installed"] is False and again["node"] == "n0"
    forced = nvq.json("node", "bootstrap", "n0", "--force")
    assert forced["installed"] is True
    job2 = nvq.submit("--gpus", "0", "--", "true")
    assert nvq.wait(job2["id"], timeout=60)[0] == 0
    bad = nvq.run("node", "bootstrap", "nope")
    assert bad.code != 0 and "no node named" in bad.err


def test_a_plain_interpreter_named_in_python_is_the_base_of_the_runners_venv(
    mesh: Any,
) -> None:
    # /usr/bin/python3 has no nvq_runner: bootstrap builds the venv from it and the
    # runner runs there (before: `python3 -m nvq_runner` failed, the node stayed
    # "unreachable: runner closed the connection", no alert).
    system = Path("/usr/bin/python3")
    probe = subprocess.run([str(system), "-c", "import sys, nvq_runner"], cwd="/",
                           capture_output=True, text=True)
    if not system.exists() or "No module named 'nvq_runner'" not in probe.stderr:
        pytest.skip("needs a /usr/bin/python3 without nvq_runner")
    nvq, nodes = mesh(1, managed_runner=True)
    config = nvq.home / "config.toml"
    config.write_text(config.read_text().replace(
        "[nodes.env]", f'python = "{system}"\n[nodes.env]'))
    job = nvq.submit("--gpus", "0", "--", "echo ran")
    code, _ = nvq.wait(job["id"], timeout=120)
    assert code == 0, nvq.json("queue", "nodes")
    venv = nodes[0].home / "venv"
    assert "/usr/bin" in (venv / "pyvenv.cfg").read_text()
    runner_cmd = Path(f"/proc/{int((nodes[0].home / 'runner.pid').read_text())}/cmdline")
    assert str(venv / "bin" / "python") in runner_cmd.read_bytes().replace(b"\0", b" ").decode()
    # exec reaches the job through the same interpreter
    sleeper = nvq.submit("--gpus", "0", "--", "sleep 600")
    nvq.wait_for(sleeper["id"], lambda j: j["state"] == "running" and j["pid"])
    r = nvq.run("job", "exec", str(sleeper["id"]), "--", "echo", "inside")
    assert (r.code, r.out) == (0, "inside\n"), r.err
    nvq.ok("job", "cancel", str(sleeper["id"]))
