"""The usage report's reads: the charged attempts and the finished jobs of a window,
on a connection of their own (read-only), so a report over a long history does not
hold up the daemon's writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from nvq.domain.report import AttemptRow, EndedJob
from nvq.model import FINISHED_STATES

_tags = msgspec.json.Decoder(list[str])


def _tags_of(text: str | None) -> list[str]:
    return _tags.decode(text) if text and text != "[]" else []


def read_window(
    db: Path, since: float, until: float, *, with_tags: bool
) -> tuple[list[AttemptRow], list[EndedJob]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        tags = "j.tags" if with_tags else "NULL"
        attempts = [
            AttemptRow(
                job_id=r[0],
                attempt=r[1],
                user=r[2],
                submitter=r[3],
                node=r[4],
                started_at=r[5],
                ended_at=r[6],
                weight=r[7],
                cards=r[8],
                dispatched_at=r[9],
                outcome=r[10],
                created_at=r[11],
                tags=_tags_of(r[12]),
            )
            for r in conn.execute(
                "SELECT c.job_id, c.attempt, c.user, c.submitter, c.node, c.started_at, "
                f"c.ended_at, c.weight, c.cards, c.dispatched_at, c.outcome, j.created_at, {tags} "
                "FROM charges c LEFT JOIN jobs j ON j.id = c.job_id "
                "WHERE c.ended_at >= ? AND c.ended_at < ?",
                (since, until),
            )
        ]
        states = ", ".join(f"'{s}'" for s in sorted(FINISHED_STATES))
        jtags = "tags" if with_tags else "NULL"
        jobs = [
            EndedJob(
                user=r[0],
                submitter=r[1],
                node=r[2],
                state=r[3],
                ended_at=r[4],
                tags=_tags_of(r[5]),
            )
            for r in conn.execute(
                f"SELECT user, submitter, node, state, ended_at, {jtags} FROM jobs "
                f"WHERE ended_at >= ? AND ended_at < ? AND state IN ({states})",
                (since, until),
            )
        ]
    finally:
        conn.close()
    return attempts, jobs
