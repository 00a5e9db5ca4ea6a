"""The `usage` and `charges` tables: each account's decayed GPU-seconds (fair share),
and every ended attempt's use of cards (limits per rolling day, the usage report)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from nvq.domain.fair_share import Usage
from nvq.model import Charge


def save(
    conn: sqlite3.Connection, usage: Sequence[tuple[str, float, float]], charges: Sequence[Charge]
) -> None:
    if usage:
        conn.executemany(
            "INSERT INTO usage (account, gpu_seconds, at) VALUES (?, ?, ?) "
            "ON CONFLICT(account) DO UPDATE SET gpu_seconds = excluded.gpu_seconds, "
            "at = excluded.at",
            usage,
        )
    if charges:
        conn.executemany(
            "INSERT OR REPLACE INTO charges (job_id, attempt, user, submitter, node, "
            "started_at, ended_at, weight, cards, dispatched_at, outcome) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    c.job_id,
                    c.attempt,
                    c.user,
                    c.submitter,
                    c.node,
                    c.started_at,
                    c.ended_at,
                    c.weight,
                    c.cards,
                    c.dispatched_at,
                    c.outcome,
                )
                for c in charges
            ],
        )


def ledger(conn: sqlite3.Connection) -> dict[str, Usage]:
    return {
        account: Usage(value, at)
        for account, value, at in conn.execute("SELECT account, gpu_seconds, at FROM usage")
    }


def ended_since(conn: sqlite3.Connection, since: float) -> list[Charge]:
    """Attempts that ended at or after `since` (the rolling day of `max_gpu_hours`)."""
    rows = conn.execute(
        "SELECT job_id, attempt, user, submitter, node, started_at, ended_at, weight "
        "FROM charges WHERE ended_at >= ? ORDER BY ended_at",
        (since,),
    )
    return [
        Charge(
            job_id=r[0],
            attempt=r[1],
            user=r[2],
            submitter=r[3],
            node=r[4],
            started_at=r[5],
            ended_at=r[6],
            weight=r[7],
        )
        for r in rows
    ]
