"""`nvq node stop NAME|--all [--kill-jobs]` stops runners and keeps them stopped until
`nvq node start`; `nvq daemon stop` says how many runners it leaves running."""

from __future__ import annotations

from pathlib import Path

from nvq_runner.launcher import runner_pid
from tests.cluster import Nvq


def test_a_node_with_running_jobs_is_stopped_only_with_kill_jobs(
    nvq: Nvq, tmp_path: Path
) -> None:
    gate = tmp_path / "started"
    job = nvq.submit("--gpus", "0", "--", f"touch {gate}; sleep 60")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running" and gate.exists())
    runner_home = nvq.home / "node"
    assert runner_pid(runner_home) is not None
    refused = nvq.run("node", "stop", "local")
    assert refused.code == 1
    assert refused.err == (
        f"nvq: node local: 1 running jobs ({job['id']}); --kill-jobs cancels them first\n"
    )
    left = nvq.json("node", "stop", "--all")
    assert left["stopped"] == [] and left["left"][0]["node"] == "local"
    assert nvq.show(job["id"])["state"] == "running"
    r = nvq.ok("node", "stop", "local", "--kill-jobs")
    assert r.out == "node local: runner stopped\n"
    assert nvq.show(job["id"])["state"] == "cancelled"
    assert runner_pid(runner_home) is None
    # it stays stopped: the daemon no longer links to it, so nothing starts it again
    (view,) = nvq.json("queue", "nodes", "--include-ignored")["nodes"]
    assert view["state"] == "stopped"
    assert runner_pid(runner_home) is None
    again = nvq.run("node", "stop", "local")
    assert again.code == 1 and again.err == "nvq: node local is stopped already\n"
    assert nvq.run("node", "stop").code == 2
    # the plain table does not just come out empty, and a job says what it waits for
    assert nvq.ok("queue", "nodes").out.startswith("no nodes to show: ")
    waits = nvq.submit("--gpus", "0", "--", "true")["id"]
    shown = nvq.wait_for(waits, lambda j: "node start" in (j["reason_detail"] or ""))
    assert shown["reason_detail"] == "local: node is stopped (`nvq node start local`)"
    started = nvq.json("node", "start", "local")
    assert started["name"] == "local"
    assert nvq.wait(waits)[0] == 0
    nvq.wait_for(job["id"], lambda _: runner_pid(runner_home) is not None)
    second = nvq.submit("--gpus", "0", "--", "echo back")
    code, (done,) = nvq.wait(second["id"])
    assert code == 0 and done["node"] == "local"


def test_daemon_stop_says_which_runners_it_leaves(nvq: Nvq, tmp_path: Path) -> None:
    gate = tmp_path / "started"
    job = nvq.submit("--gpus", "0", "--", f"touch {gate}; sleep 60")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running" and gate.exists())
    pid = int((nvq.home / "daemon.pid").read_text().split()[0])
    r = nvq.ok("daemon", "stop")
    assert r.out == (
        f"daemon {pid} stopped; 1 node runner(s) left running, so that their 1 running "
        "job(s) go on for 1h00m ([queue] max_downtime: start the daemon within it) "
        "(`nvq node stop --all` stops those without jobs)\n"
    )
    assert runner_pid(nvq.home / "node") is not None


def test_node_stop_after_daemon_stop_leaves_no_daemon_behind(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "true")
    nvq.wait(job["id"])
    nvq.ok("daemon", "stop")
    stopped = nvq.ok("node", "stop", "--all")
    assert "node local: runner stopped" in stopped.out
    assert "one was started for this and stopped again" in stopped.out
    assert nvq.ok("daemon", "stop").out == "no daemon is running\n"
