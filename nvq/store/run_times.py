"""How long finished runs of a command, or of an array's members, took: what a
running or waiting job of the same kind is expected to take (the estimated start,
nvq.domain.start_estimate). Completed jobs only: a run that failed or was cancelled
says little of how long the work takes."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Collection

# The newest runs per command or array that count: the typical run follows the work
# as it changes, and a long history costs nothing more.
NEWEST = 20


def run_times(
    conn: sqlite3.Connection, commands: Collection[str], arrays: Collection[int]
) -> tuple[dict[str, list[float]], dict[int, list[float]]]:
    """The newest completed runs' durations (seconds) of each command and array."""
    by_command: dict[str, list[float]] = defaultdict(list)
    by_array: dict[int, list[float]] = defaultdict(list)
    if not commands and not arrays:
        return {}, {}
    cmds, ids = list(commands), list(arrays)
    where = []
    if cmds:
        where.append(f"command IN ({', '.join('?' for _ in cmds)})")
    if ids:
        where.append(f"array_id IN ({', '.join('?' for _ in ids)})")
    sql = (
        "SELECT command, array_id, ended_at - started_at FROM jobs "
        f"WHERE state = 'completed' AND started_at IS NOT NULL AND ended_at IS NOT NULL "
        f"AND ({' OR '.join(where)}) ORDER BY ended_at DESC"
    )
    wanted_cmds, wanted_ids = set(cmds), set(ids)
    for command, array_id, took in conn.execute(sql, [*cmds, *ids]):
        if command in wanted_cmds and len(by_command[command]) < NEWEST:
            by_command[command].append(took)
        if array_id in wanted_ids and len(by_array[array_id]) < NEWEST:
            by_array[array_id].append(took)
    return dict(by_command), dict(by_array)
