"""The GPU memory peaks of earlier attempts of a command, read from the events that
ended them (`peak_vram_mb` in their data: nvq.domain.transitions). No table of its
own: an attempt's peak is exactly as durable as its ending."""

from __future__ import annotations

import sqlite3

from nvq.domain.vram_history import RECENT, Reached, like_pattern


def reached(conn: sqlite3.Connection, command: str) -> Reached | None:
    """The highest peak among the measured attempts of the last `RECENT` jobs of
    `command` (an array template: of any command it expands to). The newest jobs are
    found first, then their events by job: a command never run costs one pass over
    the jobs table, not over the events."""
    pattern = like_pattern(command)
    match = "command LIKE ? ESCAPE '\\'" if pattern is not None else "command = ?"
    rows = conn.execute(
        "SELECT job_id, json_extract(data, '$.attempt'), json_extract(data, '$.peak_vram_mb') "
        f"FROM events WHERE job_id IN (SELECT id FROM jobs WHERE {match} "
        f"ORDER BY id DESC LIMIT {RECENT}) AND json_extract(data, '$.peak_vram_mb') IS NOT NULL",
        (pattern if pattern is not None else command,),
    ).fetchall()
    if not rows:
        return None
    job_id, attempt, peak = max(rows, key=lambda r: (int(r[2]), -int(r[0])))
    return Reached(peak_mb=int(peak), job_id=int(job_id), attempt=int(attempt or 0))
