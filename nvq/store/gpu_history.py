"""The `gpu_history` table (schema version 5): one point per node-GPU per minute —
memory split as the Nodes page shows it, and utilisation — for the last 7 days.
Written by the daemon's history task; older points are deleted as new ones arrive,
so the table stays bounded (7 × 1440 rows per card)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

KEEP = 7 * 86400.0
COLUMNS = "time, node, gpu, mem_total_mb, foreign_mb, queue_mb, reserved_mb, util_percent"


def append(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]], now: float) -> None:
    """Rows in COLUMNS order, in one transaction that also drops points past KEEP; a
    point already there for that minute is replaced."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(
            f"INSERT OR REPLACE INTO gpu_history ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            list(rows),
        )
        conn.execute("DELETE FROM gpu_history WHERE time < ?", (now - KEEP,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def read(
    conn: sqlite3.Connection, *, since: float, node: str | None, step: float
) -> list[tuple[Any, ...]]:
    """Points after `since`, averaged over `step` seconds (one row per node-GPU per
    step), oldest first, in COLUMNS order."""
    where = "time >= ?" + (" AND node = ?" if node is not None else "")
    args: list[Any] = [since] + ([node] if node is not None else [])
    sql = (
        f"SELECT CAST(time / {float(step)!r} AS INTEGER) * {float(step)!r} AS t, node, gpu,"
        " MAX(mem_total_mb), CAST(AVG(foreign_mb) AS INTEGER), CAST(AVG(queue_mb) AS INTEGER),"
        " CAST(AVG(reserved_mb) AS INTEGER), CAST(AVG(util_percent) AS INTEGER)"
        f" FROM gpu_history WHERE {where} GROUP BY node, gpu, t ORDER BY t, node, gpu"
    )
    return conn.execute(sql, args).fetchall()
