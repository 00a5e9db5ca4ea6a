"""The GPU memory peaks of earlier attempts of a command, read from the events that
ended them (`peak_vram_mb` in their data: nvq.domain.transitions). No table of its
own: an attempt's peak is exactly as durable as its ending."""

from __future__ import annotations

import sqlite3

from nvq.domain.vram_history import RECENT, Reached, like_pattern


def reached(conn: sqlite3.Connection, command: str) -> Reached | None:
    """The highest peak among the last `RECENT` measured attempts of `command` (an
    array template: of any command it expands to)."""
    pattern = like_pattern(command)
    match = "j.command LIKE ? ESCAPE '\\'" if pattern is not None else "j.command = ?"
    rows = conn.execute(
        "SELECT e.job_id, json_extract(e.data, '$.attempt'), "
        "json_extract(e.data, '$.peak_vram_mb') FROM jobs j JOIN events e ON e.job_id = j.id "
        f"WHERE {match} AND json_extract(e.data, '$.peak_vram_mb') IS NOT NULL "
        f"ORDER BY e.id DESC LIMIT {RECENT}",
        (pattern if pattern is not None else command,),
    ).fetchall()
    if not rows:
        return None
    job_id, attempt, peak = max(rows, key=lambda r: (int(r[2]), -int(r[0])))
    return Reached(peak_mb=int(peak), job_id=int(job_id), attempt=int(attempt or 0))
