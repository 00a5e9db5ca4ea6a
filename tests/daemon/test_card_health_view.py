"""A card its runner reports unhealthy (here a fatal Xid, injected through the fake
backend) takes no new job while its node's other card does; `queue nodes` shows the
evidence and one `gpu_unhealthy` alert names it. Through the real CLI on a real sshd node."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.fixtures import SshdNodesFactory

TWO_CARDS = (
    'cuda = "13.0"\n'
    '[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\nxid = 79\n'
    '[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n'
)


def _until(pred: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return got


def test_an_unhealthy_card_takes_no_job(tmp_path: Path, sshd_nodes: SshdNodesFactory) -> None:
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    try:
        (gpu_file,) = write_mesh_config(nvq, [node], gpus=TWO_CARDS)

        def cards() -> list[dict[str, Any]]:
            (n0,) = nvq.json("queue", "nodes")
            return n0["gpus"] if n0["state"] == "up" else []

        # the first sample after the Hello carries the runner's evidence
        sick, well = _until(lambda: cards() and cards()[0]["faults"] and cards(), "evidence")
        assert sick["faults"] == ["xid 79"] and not sick["schedulable"]
        assert well["faults"] == [] and well["schedulable"]
        assert "n0:0 unhealthy: xid 79" in nvq.ok("queue", "nodes").out
        (alert,) = [a for a in nvq.run("queue", "alerts", "--json").json()
                    if a["kind"] == "gpu_unhealthy"]
        assert alert["message"] == "card n0:0 is unhealthy (xid 79); it takes no new job"
        jobs = [nvq.submit("--vram", "20GiB", "--", "true") for _ in range(2)]
        code, done = nvq.wait(*(j["id"] for j in jobs), timeout=90)
        assert code == 0 and all(j["gpus"] == [1] for j in done), done

        gpu_file.write_text(TWO_CARDS.replace("xid = 79\n", ""))  # the card is replaced
        _until(lambda: cards() and cards()[0]["schedulable"], "card 0 open again")
    finally:
        nvq.shutdown()
