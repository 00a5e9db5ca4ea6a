"""While a node's link is down and node_grace runs, views say so: the node shows
`unreachable 40s (reassign in 80s)`, its running job `unreachable` instead of a frozen
`running`, and its cards keep the foreign use last seen. A display, not a stored state:
the job is `running` again when the node is back."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from nvq.cli.render.jobs import jobs_table
from nvq.cli.render.queue import nodes_table, unreachable_label
from nvq.model import Job, JobState, NodeView
from nvq.tui.gpu_bar import node_row
from tests.cluster import make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory


def test_the_label_counts_from_the_drop_and_to_the_grace_end() -> None:
    n = NodeView(name="n0", host=None, state="connecting", last_seen=None, running_jobs=1,
                 unreachable_since=1000.0, grace_ends_at=1120.0)
    assert unreachable_label(n, now=1040.0) == "unreachable 40s (reassign in 1m20s)"
    idle = NodeView(name="n1", host=None, state="connecting", last_seen=None,
                    unreachable_since=1000.0, grace_ends_at=1120.0)
    assert unreachable_label(idle, now=1040.0) == "unreachable 40s"
    up = NodeView(name="n2", host=None, state="up", last_seen=None)
    assert unreachable_label(up) is None
    assert "unreachable" in nodes_table([n]) and "unreachable" not in nodes_table([up])
    assert str(node_row(n)[2]).startswith("unreachable ")  # the TUI's row
    job = Job(id=7, name="train", state=JobState.RUNNING, command="true", node="n0",
              user="u", submitter="u", created_at=0.0)
    assert " unreachable " in jobs_table([job], unreachable={"n0"})
    assert " running " in jobs_table([job], unreachable={"n1"})


def _until(pred: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return got


def test_a_lost_link_shows_unreachable_until_the_node_is_back(
    tmp_path: Path, sshd_nodes: SshdNodesFactory
) -> None:
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    card = (
        'cuda = "13.0"\n[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n'
        f'[[gpu.process]]\npid = {os.getpid()}\nuser = "alice"\nused = "10GiB"\n'
    )
    try:
        write_mesh_config(nvq, [node], gpus=card)
        config = nvq.home / "config.toml"
        config.write_text(config.read_text().replace('node_grace = "2s"', 'node_grace = "1h"'))
        gate = tmp_path / "gate"
        job = nvq.submit("--vram", "2GiB", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
        nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
        (seen,) = nvq.json("queue", "nodes")["nodes"]
        assert seen["gpus"][0]["external_mem_mb"] == 10240

        node.kill_all()  # sshd and its sessions die; the runner and the job go on
        (lost,) = _until(
            lambda: [n for n in nvq.json("queue", "nodes")["nodes"] if n["unreachable_since"]],
            "n0 unreachable",
        )
        assert lost["state"] == "connecting" and lost["grace_ends_at"] > time.time() + 3000
        assert lost["gpus"][0]["external_mem_mb"] == 10240  # the last use seen, not 0
        assert "unreachable" in nvq.ok("queue", "nodes").out
        assert "(reassign in" in nvq.ok("queue", "nodes").out
        status = nvq.ok("queue", "status").out
        (row,) = [ln for ln in status.splitlines() if ln.startswith(f"{job['id']} ")]
        assert "unreachable" in row.split()[1], status
        assert nvq.show(job["id"])["state"] == "running"  # stored state unchanged

        node.start()
        _until(lambda: nvq.json("queue", "nodes")["nodes"][0]["state"] == "up", "n0 back")
        assert nvq.json("queue", "nodes")["nodes"][0]["unreachable_since"] is None
        gate.touch()
        assert nvq.wait(job["id"], timeout=60)[0] == 0
    finally:
        nvq.shutdown()
