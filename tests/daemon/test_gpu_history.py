"""The cards' history behind the Nodes page's chart: one point per node-GPU per
interval, kept 7 days, read back averaged over a step."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from nvq import gpu_history_db
from nvq.client import Client
from tests.cluster import Nvq

DAY = 86400.0


def _db(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "h.db")
    conn.executescript(gpu_history_db.MIGRATION)
    return conn


def test_points_older_than_seven_days_are_dropped_as_new_ones_arrive(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    now = 1_800_000_000.0
    old = [(now - 8 * DAY + m * 60, "a", 0, 1000, 0, 0, 0, 10) for m in range(5)]
    gpu_history_db.append(conn, old, now - 8 * DAY + 300)
    gpu_history_db.append(conn, [(now, "a", 0, 1000, 100, 200, 300, 50)], now)
    rows = gpu_history_db.read(conn, since=0, node=None, step=60)
    assert rows == [(now, "a", 0, 1000, 100, 200, 300, 50)]


def test_reading_averages_each_card_over_the_step(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    t0 = 1_800_000_000.0  # a multiple of 300
    rows = [(t0 + m * 60, "a", g, 1000, 100 * m, 0, 0, 10 * m) for m in range(5) for g in (0, 1)]
    gpu_history_db.append(conn, rows, t0 + 240)
    read = gpu_history_db.read(conn, since=t0, node="a", step=300)
    assert read == [(t0, "a", 0, 1000, 200, 0, 0, 20), (t0, "a", 1, 1000, 200, 0, 0, 20)]


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
        first = [p for p in points if p.gpu == 0 and p.foreign_mb == 6144]
        if (first and any(p.gpu == 1 for p in points)) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert first, points
    assert first[-1].mem_total_mb == 24576 and first[-1].util_percent == 40
    assert any(p.gpu == 1 and p.foreign_mb == 0 for p in points)
    assert client.gpu_history(node="elsewhere") == []
