"""MIG instances are places (fake backend, real daemon and runner, the real CLI): a
card split into instances shows them as separate units with their own memory, a job
is placed within one (`--vram` must fit the instance, not the card) and sees the
instance's MIG UUID in CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import make_nvq

SPLIT = """\
cuda = "13.0"
[[gpu]]
name = "Fake A100"
memory = "80GiB"
mig = [{ profile = "3g.40gb", memory = "40GiB" }, { profile = "1g.10gb", memory = "10GiB" }]
"""


def test_a_split_card_is_placed_instance_by_instance(tmp_path: Path) -> None:
    nvq = make_nvq(tmp_path, gpus=SPLIT)
    try:
        job = nvq.submit("--vram", "30GiB", "--", "echo on $CUDA_VISIBLE_DEVICES")
        code, (done,) = nvq.wait(job["id"], timeout=90)
        assert code == 0 and done["gpus"] == [0], done
        assert nvq.ok("job", "logs", str(job["id"])).out.strip() == "on MIG-fake-0000"
        (node,) = nvq.json("queue", "nodes")["nodes"]
        assert [(g["index"], g["name"], g["mig"], g["parent"], g["mem_total_mb"])
                for g in node["gpus"]] == [
            (0, "Fake A100 MIG 3g.40gb", "3g.40gb", 0, 40960),
            (1, "Fake A100 MIG 1g.10gb", "1g.10gb", 0, 10240),
        ]
        # the card has 80 GiB, but no instance holds 41: refused at submit
        big = nvq.run("job", "submit", "--vram", "41GiB", "--", "true")
        assert big.code == 2 and "the largest card on any node holds 39.5GiB" in big.err, big
    finally:
        nvq.shutdown()
