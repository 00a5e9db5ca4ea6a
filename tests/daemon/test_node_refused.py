"""A node that refuses us for a reason retrying cannot fix (its host key is unknown)
is alerted at once, with the fix, not after `node_grace`; trusting the key brings it
up and settles the alert. Through the real CLI on a real sshd node."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory


def _until(pred: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return got


def _alerts(nvq: Nvq, *flags: str) -> list[dict[str, Any]]:
    return nvq.run("queue", "alerts", "--json", *flags).json()["alerts"]  # type: ignore[no-any-return]


def test_unknown_host_key_is_alerted_at_once(
    tmp_path: Path, sshd_nodes: SshdNodesFactory
) -> None:
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    try:
        write_mesh_config(nvq, [node])
        config = nvq.home / "config.toml"
        # a grace no test outlives: an alert seen at all was raised before it ran out
        config.write_text(config.read_text().replace('node_grace = "2s"', 'node_grace = "1h"'))
        node.known_hosts.write_text("")
        nvq.ok("queue", "status")

        def refused() -> list[dict[str, Any]]:
            return [a for a in _alerts(nvq) if a["kind"] == "node_refused"]

        (alert,) = _until(refused, "the node_refused alert")
        assert alert["node"] == "n0" and alert["severity"] == "error"
        assert "host key unknown" in alert["message"]
        assert f"ssh-keyscan -p {node.port} 127.0.0.1 >> {node.known_hosts}" in alert["message"]
        (n0,) = nvq.json("queue", "nodes")["nodes"]
        assert n0["state"] == "connecting" and "host key unknown" in n0["error"]
        assert "host key unknown" in nvq.ok("queue", "nodes").out
        # retries of the same refusal raise nothing new
        assert len(refused()) == 1

        node.write_known_hosts()
        _until(lambda: nvq.json("queue", "nodes")["nodes"][0]["state"] == "up", "n0 up")
        _until(lambda: not refused(), "the alert settled")
        assert any(a["kind"] == "node_refused" for a in _alerts(nvq, "--all"))
    finally:
        nvq.shutdown()
