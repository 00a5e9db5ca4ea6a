"""The `lanes` table: which GPU lanes are paused (a lane's jobs are ordinary rows of
`jobs`, ordered by `lane_pos`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def save(conn: sqlite3.Connection, lanes: Sequence[tuple[str, bool]]) -> None:
    """Upsert (lane, paused) pairs."""
    conn.executemany(
        "INSERT INTO lanes (name, paused) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET paused = excluded.paused",
        [(name, int(paused)) for name, paused in lanes],
    )


def paused(conn: sqlite3.Connection) -> dict[str, bool]:
    return {name: bool(p) for name, p in conn.execute("SELECT name, paused FROM lanes")}
