"""Scheduling policy on sshd nodes with fake GPUs: CUDA matching picks the node whose
driver is new enough, a pin that cannot match is unschedulable, and a lane on a
remote card runs in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon.test_ssh_nodes import _until, mesh  # noqa: F401  (the fixture)

OLD = 'cuda = "12.2"\n[[gpu]]\nname = "Fake T4"\nmemory = "16GiB"\n'
NEW = 'cuda = "13.0"\n[[gpu]]\nname = "Fake L4"\nmemory = "24GiB"\n'


def test_cuda_matching_and_lanes_across_nodes(mesh: Any, tmp_path: Path) -> None:  # noqa: F811
    nvq, _nodes = mesh(2, gpus=[OLD, NEW])
    _until(
        lambda: sum(n["state"] == "up" for n in nvq.json("queue", "nodes")["nodes"]) == 2,
        what="both nodes up",
    )
    jobs = [nvq.submit("--cuda", "13.0", "--", "true") for _ in range(3)]
    code, done = nvq.wait(*(j["id"] for j in jobs))
    assert code == 0 and {j["node"] for j in done} == {"n1"}
    pinned = nvq.run("job", "submit", "--node", "n0", "--cuda", "13.0", "--", "true")
    assert pinned.code == 2 and "12.2" in pinned.err, pinned.err
    big = nvq.submit("--vram", "20GiB", "--", "true")  # only n1's card can hold it
    assert nvq.wait(big["id"])[1][0]["node"] == "n1"
    ledger = tmp_path / "ledger"
    ids = [
        nvq.submit("--lane", "n0:0", "--", f"echo $NVQ_JOB_ID >> {ledger}")["id"] for _ in range(3)
    ]
    code, ran = nvq.wait(*ids)
    assert code == 0 and {(j["node"], tuple(j["gpus"])) for j in ran} == {("n0", (0,))}
    assert [int(x) for x in ledger.read_text().split()] == ids
    lanes = {x["lane"]: x for x in nvq.json("queue", "lanes")["lanes"]}
    assert set(lanes) == {"n0:0", "n1:0"}
