"""A node removed from the config while its job runs."""

from __future__ import annotations

from typing import Any

from tests.cluster import Nvq, write_mesh_config


def test_a_job_on_a_node_removed_from_config_is_accounted_for(
    nvq: Nvq, sshd_nodes: Any
) -> None:
    nodes = sshd_nodes(2)
    write_mesh_config(nvq, nodes)
    job = nvq.submit("--node", "n1", "--gpus", "0", "--", "sleep", "60")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=60)
    write_mesh_config(nvq, nodes[:1])
    nvq.ok("daemon", "stop")
    got = nvq.wait_for(job["id"], lambda j: j["state"] in ("lost", "pending"), timeout=60)
    alerts = nvq.run("queue", "alerts", "--json").json()
    assert any("n1" in a["message"] and "config" in a["message"] for a in alerts), (got, alerts)
