"""Reassignment on time: a node's link frozen (its sshd SIGSTOPped: a partition), how
late its `node_down` (the moment its jobs move) comes after the moment `queue nodes`
promised (`grace_ends_at`), and after the freeze itself. Two sshd nodes, the default
ssh_keepalive (5s) and connect timeout (10s), `node_grace` 45s (a long one: the
link's reconnect backoff then reaches its 30s cap, which is what made the old check,
run only after a failed connect, late).

Prints one JSON line.

    cd bench && ../.venv/bin/python reassign_delay.py --rounds 3
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ONE_CARD, emit, machine, wait_nodes_up

from tests.cluster import make_nvq, write_mesh_config
from tests.harness.sshd import start_sshd_nodes

TWO_NODES = 2


def _nodes(nvq: Any) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in nvq.json("queue", "nodes")}


def one_round(nvq: Any, node: Any, since: int) -> dict[str, float]:
    job = nvq.submit("--node", "n1", "--gpus", "0", "--", "sleep", "3600")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running", timeout=120)
    frozen_at = time.time()
    node.pause()
    try:
        promised = None
        while True:
            n1 = _nodes(nvq)["n1"]
            if promised is None and n1.get("grace_ends_at"):
                promised = float(n1["grace_ends_at"])
            down = [e for e in nvq.json("queue", "events", "--since", str(since))
                    if e["kind"] == "node_down" and e["node"] == "n1"]
            if down:
                break
            time.sleep(0.2)
    finally:
        node.resume()
    at = float(down[0]["time"])
    nvq.ok("job", "cancel", str(job["id"]))
    wait_nodes_up(nvq, timeout=120)
    return {"late_s": round(at - (promised or at), 2), "after_freeze_s": round(at - frozen_at, 2),
            "event": int(down[0]["id"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--node-grace", type=int, default=45)
    args = ap.parse_args()
    rounds: list[dict[str, float]] = []
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-reassign-"))
    nodes = start_sshd_nodes(tmp / "sshd", TWO_NODES)
    nvq = make_nvq(tmp, gpus=ONE_CARD)
    try:
        write_mesh_config(nvq, nodes, gpus=ONE_CARD, keepalive="5s")
        config = (nvq.home / "config.toml").read_text()
        config = re.sub(r'node_grace = "\w+"', f'node_grace = "{args.node_grace}s"', config)
        config = config.replace('lease = "off"', "").replace('ssh_connect_timeout = "3s"', "")
        nvq.write_config(config)
        nvq.ok("queue", "status")
        wait_nodes_up(nvq)
        since = 0
        for _ in range(args.rounds):
            r = one_round(nvq, nodes[1], since)
            since = int(r.pop("event"))
            rounds.append(r)
    finally:
        nvq.shutdown()
        for node in nodes:
            node.close()
        shutil.rmtree(tmp, ignore_errors=True)
    late = [r["late_s"] for r in rounds]
    emit({"bench": "reassign_delay", "machine": machine(), "node_grace_s": args.node_grace,
          "rounds": rounds, "late_max_s": max(late), "late_min_s": min(late)})


if __name__ == "__main__":
    main()
