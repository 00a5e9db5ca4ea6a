"""The `events` table: the append-only history of every transition, written in the
same transaction as the transition itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec

from nvq.model import Event

# (time, kind, job_id, node, data as JSON text)
EventRow = tuple[float, str, int | None, str | None, str]


def insert(conn: sqlite3.Connection, rows: Sequence[EventRow]) -> list[Event]:
    """Insert `rows`; returns them as `select` would read them back, with their ids."""
    conn.executemany(
        "INSERT INTO events (time, kind, job_id, node, data) VALUES (?, ?, ?, ?, ?)", rows
    )
    # One writer, one statement: the rows took consecutive ids ending here.
    last_id = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
    first = last_id - len(rows) + 1
    return [
        Event(
            id=first + i,
            time=t,
            kind=kind,
            job_id=job_id,
            node=node,
            data=msgspec.json.decode(data),
        )
        for i, (t, kind, job_id, node, data) in enumerate(rows)
    ]


def select(
    conn: sqlite3.Connection, *, since: int = 0, job_id: int | None = None, limit: int | None = None
) -> list[Event]:
    sql = "SELECT id, time, kind, job_id, node, data FROM events WHERE id > ?"
    args: list[Any] = [since]
    if job_id is not None:
        sql += " AND job_id = ?"
        args.append(job_id)
    sql += " ORDER BY id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [
        Event(
            id=r[0],
            time=r[1],
            kind=r[2],
            job_id=r[3],
            node=r[4],
            data=msgspec.json.decode(r[5]),
        )
        for r in conn.execute(sql, args).fetchall()
    ]
