"""An exit the runner recorded always wins over what the daemon guessed while the node
was away."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq, make_nvq, write_mesh_config

ONE_CARD = 'cuda = "13.0"\n[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n'


@pytest.fixture
def mesh(tmp_path: Path, sshd_nodes: Any) -> Any:
    made: list[Nvq] = []

    def build(n: int, **kwargs: Any) -> tuple[Nvq, list[Any]]:
        nodes = sshd_nodes(n)
        nvq = make_nvq(tmp_path / f"q{len(made)}")
        write_mesh_config(nvq, nodes, **kwargs)
        made.append(nvq)
        return nvq, nodes

    yield build
    for nvq in made:
        nvq.shutdown()


def _until(pred: Any, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_a_no_reassign_job_that_completed_while_its_node_was_away_completes(
    mesh: Any, tmp_path: Path
) -> None:
    nvq, nodes = mesh(1, gpus=ONE_CARD)
    gate = tmp_path / "gate"
    body = (
        f"while [ ! -e {gate} ]; do sleep 0.05; done; "
        'echo \'{"acc": 0.9}\' > "$NVQ_JOB_DIR/result.json"'
    )
    job = nvq.submit("--no-reassign", "--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["started_at"])
    nodes[0].kill_all()
    nvq.wait_for(job["id"], lambda x: x["state"] == "lost", timeout=30)
    gate.touch()  # it finishes, well, while nobody can see it
    time.sleep(0.5)
    nodes[0].start()
    done = nvq.wait_for(job["id"], lambda x: x["state"] != "lost", timeout=60)
    assert done["state"] == "completed" and done["exit_code"] == 0
    assert nvq.json("job", "result", str(job["id"])) == {"acc": 0.9}


def test_an_attempt_that_ended_before_node_down_ends_the_job(mesh: Any, tmp_path: Path) -> None:
    nvq, nodes = mesh(2, gpus=ONE_CARD)
    ledger = tmp_path / "ledger"
    nvq.ok("queue", "drain", "n0")
    body = f'echo $NVQ_ATTEMPT >> {ledger}; if [ "$NVQ_ATTEMPT" = 1 ]; then sleep 1; else sleep 60; fi'
    job = nvq.submit("--", body)
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n1")
    nvq.ok("queue", "resume", "n0")
    nodes[1].pause()  # hung: attempt 1 ends, but nobody hears of it
    time.sleep(2.5)
    nodes[1].kill_all()
    # Down past node_grace: attempt 2 starts on n0.
    nvq.wait_for(job["id"], lambda x: x["state"] == "running" and x["node"] == "n0", timeout=60)
    nodes[1].start()
    done = nvq.wait_for(job["id"], lambda x: x["state"] not in ("running", "pending"), timeout=60)
    # Attempt 1 completed before the node was declared down: that is the outcome.
    assert done["state"] == "completed" and done["exit_code"] == 0, done
    _until(lambda: not any(
        j["id"] == job["id"] and j["state"] == "running" for j in nvq.json("job", "ls")
    ), what="attempt 2 stopped")
