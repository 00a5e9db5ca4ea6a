"""`--max-runtime` on a borrowed node, through the real CLI on sshd nodes: the job
that ran out its time there runs next on another node (waiting for room there)
rather than on the same borrowed node again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon.test_machines_come_and_go import mesh  # noqa: F401 (the fixture)
from tests.daemon.test_ssh_nodes import ONE_CARD, _until


def test_the_next_attempt_avoids_the_node_whose_time_it_ran_out(
    mesh: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    # n0 is alice's workstation, lent to the queue; tests submit as root.
    nvq, _ = mesh(2, gpus=ONE_CARD, owners={0: "alice"})
    nvq.ok("queue", "status")
    _until(lambda: all(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]), what="nodes up")
    nvq.ok("queue", "drain", "n0")
    gate = tmp_path / "gate"
    blocker = nvq.submit("--vram", "20GiB", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running" and j["node"] == "n1")
    nvq.ok("queue", "resume", "n0")
    body = 'if [ "$NVQ_ATTEMPT" -gt 1 ]; then echo "ran on $NVQ_NODE"; exit 0; fi; sleep 60'
    job = nvq.submit("--vram", "20GiB", "--max-runtime", "2s", "--", body)
    nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["node"] == "n0")
    stopped = nvq.wait_for(job["id"], lambda j: j["attempts"][0]["outcome"] == "preempted")
    assert "--max-runtime" in stopped["attempts"][0]["reason"]
    # n1 could hold it: it waits there for room, n0 idle or not
    assert nvq.wait(job["id"], timeout=3)[0] == 2
    waiting = nvq.show(job["id"])
    assert waiting["state"] == "pending" and len(waiting["attempts"]) == 1
    gate.touch()
    code, (done,) = nvq.wait(job["id"], timeout=60)
    assert code == 0 and done["node"] == "n1" and done["attempt"] == 2
    assert nvq.ok("job", "logs", str(job["id"])).out == "ran on n1\n"
