"""Small honest answers: a lane on a card the node does not have is an error, and a
mistyped command gets one suggestion."""

from __future__ import annotations

import time

from tests.cluster import Nvq


def test_a_lane_on_a_missing_card_is_an_error(nvq: Nvq) -> None:
    deadline = time.monotonic() + 30
    while not any(n["state"] == "up" for n in nvq.json("queue", "nodes")):
        assert time.monotonic() < deadline, "the node never came up"
        time.sleep(0.1)
    r = nvq.run("queue", "lane", "local:7")
    assert r.code == 1
    assert r.err == "nvq: lane local:7: node local has no GPU 7 (GPUs: 0, 1)\n"
    assert nvq.json("queue", "lane", "local:1")["jobs"] == []


def test_a_mistyped_command_is_suggested_once(nvq: Nvq) -> None:
    r = nvq.run("jbo")
    assert r.code == 2 and r.err == "nvq: No such command 'jbo'. Did you mean 'job'?\n"
    r = nvq.run("job", "sbumit")
    assert r.err == "nvq: No such command 'sbumit'. Did you mean 'submit'?\n"
