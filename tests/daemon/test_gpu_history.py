"""The daemon records each card of a node that is up, once per interval, for the
Nodes page's chart."""

from __future__ import annotations

import time

from nvq.client import Client
from tests.cluster import Nvq


def test_the_daemon_records_every_card_of_a_node_that_is_up(nvq: Nvq) -> None:
    nvq.write_gpus(
        'cuda = "13.0"\n[[gpu]]\nname = "A"\nmemory = "24GiB"\nutil = 40\n'
        '[[gpu.process]]\npid = 7\nuser = "someone"\nused = "6GiB"\n'
        '[[gpu]]\nname = "B"\nmemory = "24GiB"\n'
    )
    nvq.env["NVQ_GPU_HISTORY_EVERY"] = "0.2"
    nvq.ok("queue", "status")
    client = Client(nvq.home)
    deadline = time.monotonic() + 30
    while True:
        points = client.gpu_history(node="local")
        # A point averages its step's samples, and the step's first sample may come
        # before the runner saw the card's process: near 6 GiB, never over it.
        first = [p for p in points if p.gpu == 0 and 5000 < p.foreign_mb <= 6144]
        if (first and any(p.gpu == 1 for p in points)) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert first, points
    assert first[-1].mem_total_mb == 24576 and first[-1].util_percent == 40
    assert any(p.gpu == 1 and p.foreign_mb == 0 for p in points)
    assert client.gpu_history(node="elsewhere") == []
