"""The `nodes` table (a node's journal position, facts and flags) and `reaps`, the
kills the queue still owes a node."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec

from nvq.model import NodeSeq, Reap

_json = msgspec.json.Encoder()


class NodeRecord(msgspec.Struct):
    name: str
    journal_id: str
    applied_seq: int
    facts: dict[str, Any] | None
    last_seen: float | None
    drained: bool
    ignored: bool


def set_seq(conn: sqlite3.Connection, seq: NodeSeq) -> None:
    """The node journal entry a transition applied (inside that transition)."""
    conn.execute(
        "INSERT INTO nodes (name, journal_id, applied_seq) VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET journal_id = excluded.journal_id, "
        "applied_seq = excluded.applied_seq",
        (seq.node, seq.journal_id, seq.seq),
    )


def save(
    conn: sqlite3.Connection,
    name: str,
    *,
    facts: dict[str, Any] | None = None,
    last_seen: float | None = None,
    drained: bool | None = None,
    ignored: bool | None = None,
) -> None:
    """Node bookkeeping that is not a job transition (facts, flags, last seen)."""
    conn.execute("INSERT OR IGNORE INTO nodes (name) VALUES (?)", (name,))
    sets: list[str] = []
    args: list[Any] = []
    if facts is not None:
        sets.append("facts = ?")
        args.append(_json.encode(facts).decode())
    if last_seen is not None:
        sets.append("last_seen = ?")
        args.append(last_seen)
    if drained is not None:
        sets.append("drained = ?")
        args.append(int(drained))
    if ignored is not None:
        sets.append("ignored = ?")
        args.append(int(ignored))
    if sets:
        conn.execute(f"UPDATE nodes SET {', '.join(sets)} WHERE name = ?", (*args, name))


def records(conn: sqlite3.Connection) -> dict[str, NodeRecord]:
    rows = conn.execute(
        "SELECT name, journal_id, applied_seq, facts, last_seen, drained, ignored FROM nodes"
    ).fetchall()
    return {
        r[0]: NodeRecord(
            name=r[0],
            journal_id=r[1],
            applied_seq=r[2],
            facts=msgspec.json.decode(r[3]) if r[3] else None,
            last_seen=r[4],
            drained=bool(r[5]),
            ignored=bool(r[6]),
        )
        for r in rows
    }


# ---------------------------------------------------------------- reaps


def add_reaps(conn: sqlite3.Connection, reaps: Sequence[Reap]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO reaps (job_id, attempt, node, reason) VALUES (?, ?, ?, ?)",
        [(r.job_id, r.attempt, r.node, r.reason) for r in reaps],
    )


def drop_reaps(conn: sqlite3.Connection, keys: Sequence[tuple[int, int]]) -> None:
    """Forget the kills of these (job_id, attempt)."""
    conn.executemany("DELETE FROM reaps WHERE job_id = ? AND attempt = ?", keys)


def reaps(conn: sqlite3.Connection) -> list[Reap]:
    rows = conn.execute("SELECT job_id, attempt, node, reason FROM reaps").fetchall()
    return [Reap(job_id=r[0], attempt=r[1], node=r[2], reason=r[3]) for r in rows]
