"""The cards' history table: bounded to 7 days as points arrive, read back averaged
over a step."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nvq.store import gpu_history as history_table
from nvq.store.schema import MIGRATIONS

DAY = 86400.0


def _db(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
    conn.executescript(MIGRATIONS[4])
    return conn


def test_points_older_than_seven_days_are_dropped_as_new_ones_arrive(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    now = 1_800_000_000.0
    old = [(now - 8 * DAY + m * 60, "a", 0, 1000, 0, 0, 0, 10) for m in range(5)]
    history_table.append(conn, old, now - 8 * DAY + 300)
    history_table.append(conn, [(now, "a", 0, 1000, 100, 200, 300, 50)], now)
    rows = history_table.read(conn, since=0, node=None, step=60)
    assert rows == [(now, "a", 0, 1000, 100, 200, 300, 50)]


def test_reading_averages_each_card_over_the_step(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    t0 = 1_800_000_000.0  # a multiple of 300
    rows = [(t0 + m * 60, "a", g, 1000, 100 * m, 0, 0, 10 * m) for m in range(5) for g in (0, 1)]
    history_table.append(conn, rows, t0 + 240)
    read = history_table.read(conn, since=t0, node="a", step=300)
    assert read == [(t0, "a", 0, 1000, 200, 0, 0, 20), (t0, "a", 1, 1000, 200, 0, 0, 20)]
