"""Placement looks at the card, not just its memory: a job goes to the card that is not
busy with work the queue did not start, and one that can only go to a busy card says
so in `job show` and `job why` (fake cards with foreign processes, the real CLI)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.cluster import Nvq

CARDS = """\
cuda = "13.0"

[[gpu]]
name = "Fake A100"
memory = "24GiB"
util = 95
[[gpu.process]]
pid = 4242
user = "alice"
used = "1GiB"

[[gpu]]
name = "Fake A100"
memory = "24GiB"
util = 3
[[gpu.process]]
pid = 4243
user = "bob"
used = "8GiB"
"""


def sampled(nvq: Nvq) -> list[Any]:
    """Wait until the node reports its cards with their foreign processes."""
    deadline = time.monotonic() + 60
    while True:
        (node,) = nvq.json("queue", "nodes")["nodes"]
        gpus = node["gpus"]
        if len(gpus) == 2 and all(g["external_mem_mb"] for g in gpus):
            return gpus  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, node
        time.sleep(0.1)


def test_a_job_avoids_the_busy_card_and_says_when_it_cannot(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_gpus(CARDS)
    gpus = sampled(nvq)
    assert gpus[0]["util_percent"] == 95 and gpus[0]["free_mb"] > gpus[1]["free_mb"]
    small = nvq.submit("--vram", "4GiB", "--", "echo small")["id"]
    code, (done,) = nvq.wait(small)
    assert code == 0 and done["gpus"] == [1]  # the quiet card, though card 0 has more room
    assert done["reason"] is None

    go = tmp_path / "go"
    big = nvq.submit("--vram", "20GiB", "--", f"while [ ! -e {go} ]; do sleep 0.05; done")["id"]
    shown = nvq.wait_for(big, lambda j: j["state"] == "running")
    note = ("placed on local:0 (95 % busy) with work the queue did not start: "
            "the only card with room")
    assert shown["gpus"] == [0] and shown["reason"] == note
    assert note in nvq.ok("job", "show", str(big)).out
    assert nvq.ok("job", "why", str(big)).out.strip() == f"job {big} is running: {note}"
    go.touch()
    assert nvq.wait(big)[0] == 0


def test_jobs_without_vram_take_turns_over_equally_free_cards(nvq: Nvq) -> None:
    """With `[queue] share_cards = true`, `--gpus 1` with no `--vram` reserves nothing,
    so both cards stay equally free; the one running fewer queue jobs is taken, not
    card 0 every time. (Without it each such job holds a card whole: test_whole_cards.)"""
    nvq.write_config("[queue]\nshare_cards = true\n")
    nvq.nodes_up()
    ids = nvq.submit("--gpus", "1", "--array", "1-4", "--", "sleep", "600")["ids"]
    cards = [
        nvq.wait_for(i, lambda j: j["state"] == "running")["gpus"] for i in ids
    ]
    assert sorted(cards) == [[0], [0], [1], [1]], cards
    nvq.ok("job", "cancel", *map(str, ids))
