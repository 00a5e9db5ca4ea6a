"""The config is live, through the real CLI on real sshd nodes: `nvq node add` appends
a checked [[nodes]] table (the file's comments stay) and the daemon connects to it;
`nvq daemon reload` drains a node removed from config.toml while its job runs (the job
finishes and reports, then the node goes), names the change that needs a restart,
refuses a config that does not load; SIGHUP reloads too."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory


def _until(pred: Any, what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return got


def test_nodes_come_and_go_while_the_queue_runs(
    tmp_path: Path, sshd_nodes: SshdNodesFactory
) -> None:
    n0, n1 = sshd_nodes(2)
    nvq = make_nvq(tmp_path / "q")
    try:
        _, gpus1 = write_mesh_config(nvq, [n0, n1])
        config = nvq.home / "config.toml"
        full = config.read_text()
        cut = full.index("[[nodes]]", full.index("[[nodes]]") + 1)
        first = "# our lab's queue: keep this comment\n" + full[:cut]
        config.write_text(first)

        def nodes() -> dict[str, Any]:
            return {n["name"]: n for n in nvq.json("queue", "nodes")["nodes"]}

        gate = tmp_path / "gate"
        held = nvq.submit("--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
        nvq.wait_for(held["id"], lambda j: j["state"] == "running" and j["started_at"])

        added = nvq.ok(
            "node", "add", "n1", "--host", n1.host, "--port", str(n1.port), "--user", n1.user,
            "--identity", str(n1.identity), "--known-hosts", str(n1.known_hosts),
            "--home", str(n1.home), "--python", sys.executable,
            "--env", f"NVQ_FAKE_GPUS={gpus1}", "--env", "NVQ_GPU_BACKEND=fake",
            "--env", "NVQ_SAMPLE_INTERVAL=0.5",
        )
        assert added.out.strip() == "applied: node n1 added: connecting", added.out
        assert config.read_text().startswith(first)  # appended: comments kept
        assert config.stat().st_mode & 0o777 == 0o600
        _until(lambda: nodes().get("n1", {}).get("state") == "up", "n1 up")
        again = nvq.run("node", "add", "n1", "--host", n1.host)
        assert again.code == 2 and "a node named 'n1' is already there" in again.err

        # n0 leaves the file (and a change that needs a restart comes along)
        config.write_text(first[:first.index("[[nodes]]")].replace(
            "local_node = false", "local_node = true") + full[cut:])
        assert nvq.json("queue", "status")["config_changed"] is True
        assert "config.toml changed since the daemon read it" in nvq.ok("queue", "status").out
        said = nvq.ok("daemon", "reload").out.splitlines()
        assert said == [
            "applied: node n0 removed: draining (its running jobs finish, then it goes)",
            "not applied: [queue] local_node changed: needs a daemon restart (running "
            "with false)",
        ], said
        assert nodes()["n0"]["state"] == "draining"
        status = nvq.json("queue", "status")  # the restart it needs stays in view
        assert status["needs_restart"] == [said[1].removeprefix("not applied: ")]
        assert status["config_changed"] is True
        job = nvq.submit("--", "true")
        code, (done,) = nvq.wait(job["id"], timeout=90)
        assert code == 0 and done["node"] == "n1", done
        gate.touch()  # the drained node's job finishes and reports, then the node goes
        code, (finished,) = nvq.wait(held["id"], timeout=90)
        assert code == 0 and finished["node"] == "n0", finished
        _until(lambda: "n0" not in nodes(), "n0 forgotten")

        # a config.toml that does not load changes nothing
        kept = config.read_text()
        config.write_text(kept + "\n[[nodes]]\nname = 7\n")
        bad = nvq.run("daemon", "reload")
        assert bad.code != 0 and len(bad.err.strip().splitlines()) == 1, bad.err
        assert bad.err.startswith("nvq: not reloaded, the running config is kept: "), bad.err
        assert nodes()["n1"]["state"] == "up"

        # SIGHUP reloads (and does not end the daemon): n0 is back
        config.write_text(first + full[cut:])
        pid = nvq.json("queue", "status")["daemon"]["pid"]
        os.kill(pid, signal.SIGHUP)
        _until(lambda: nodes().get("n0", {}).get("state") == "up", "n0 back after SIGHUP")
        assert nvq.json("queue", "status")["daemon"]["pid"] == pid
    finally:
        nvq.shutdown()
