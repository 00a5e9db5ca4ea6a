"""The `jobs` table: one row per job, its columns the fields of `nvq.model.Job` in
order (lists, dicts and the tri-state booleans stored as JSON text). The queue holds
a `JobRecord`; `job_to_row` and `job_from_row` are the one place a row crosses to it,
through the flat `Job` (`nvq.domain.request`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from nvq.domain import request
from nvq.model import FINISHED_STATES, Job, JobRecord, JobState, WrittenFile

_JOB_FIELDS = request.JOB_FIELDS  # the columns, in order
# What SQLite has no column type for (lists, maps, booleans: the tri-state ones need
# their null) is stored as JSON text, read off `Job`'s field types.
_PLAIN = {str, int, float, str | None, int | None, float | None, JobState}
_JSON_FIELDS = frozenset(f.name for f in msgspec.structs.fields(Job) if f.type not in _PLAIN)
# JSON fields decoded into structs, not plain dicts
_TYPED: dict[str, Any] = {"written": list[WrittenFile]}
_json = msgspec.json.Encoder()

JOB_COLUMNS = ", ".join(_JOB_FIELDS)
_JOB_PLACEHOLDERS = ", ".join("?" for _ in _JOB_FIELDS)
_JOB_UPDATE = ", ".join(f"{name} = ?" for name in _JOB_FIELDS if name != "id")


def job_to_row(record: JobRecord) -> list[Any]:
    row: list[Any] = []
    for name, value in zip(_JOB_FIELDS, request.flat_values(record), strict=True):
        if name in _JSON_FIELDS:
            value = _json.encode(value).decode()
        elif name == "state":
            value = str(value)
        row.append(value)
    return row


def job_from_row(row: Sequence[Any]) -> JobRecord:
    values: dict[str, Any] = {}
    for name, value in zip(_JOB_FIELDS, row, strict=True):
        if name in _JSON_FIELDS:
            value = (None if value is None
                     else msgspec.json.decode(value, type=_TYPED.get(name, Any)))
        elif name == "state":
            value = JobState(value)
        values[name] = value
    return request.record_from(values)


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


# ---------------------------------------------------------------- writes


def last_id(conn: sqlite3.Connection) -> int:
    # AUTOINCREMENT never reuses an id, even of a purged job: continue from the
    # sequence, not from MAX(id).
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
    return int(row[0]) if row else 0


def raise_last_id(conn: sqlite3.Connection, floor: int) -> bool:
    """Make the next inserted id come after `floor` (an id a node has seen that this
    database never assigned, after a restore or a lost WAL). True when it moved."""
    if floor <= last_id(conn):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        moved = conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'jobs'", (floor,))
        if moved.rowcount == 0:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('jobs', ?)", (floor,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return True


def insert(conn: sqlite3.Connection, jobs: Sequence[JobRecord]) -> None:
    conn.executemany(
        f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({_JOB_PLACEHOLDERS})",
        [job_to_row(job) for job in jobs],
    )


def update(conn: sqlite3.Connection, jobs: Sequence[JobRecord]) -> None:
    conn.executemany(
        f"UPDATE jobs SET {_JOB_UPDATE} WHERE id = ?",
        [[*job_to_row(job)[1:], job.id] for job in jobs],
    )


def delete(conn: sqlite3.Connection, ids: Sequence[int]) -> None:
    conn.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in ids])


# ---------------------------------------------------------------- reads


def one(conn: sqlite3.Connection, job_id: int) -> JobRecord | None:
    row = conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return job_from_row(row) if row else None


def select(
    conn: sqlite3.Connection,
    *,
    states: Iterable[JobState] | None = None,
    ids: Iterable[int] | None = None,
    limit: int | None = None,
    newest_first: bool = False,
) -> list[JobRecord]:
    where: list[str] = []
    args: list[Any] = []
    if states is not None:
        state_list = [str(s) for s in states]
        where.append(f"state IN ({_marks(state_list)})")
        args.extend(state_list)
    if ids is not None:
        id_list = list(ids)
        where.append(f"id IN ({_marks(id_list)})")
        args.extend(id_list)
    sql = f"SELECT {JOB_COLUMNS} FROM jobs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC" if newest_first else " ORDER BY id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [job_from_row(r) for r in conn.execute(sql, args).fetchall()]


def array_members(conn: sqlite3.Connection, array_id: int) -> list[JobRecord]:
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE array_id = ? ORDER BY id", (array_id,)
    ).fetchall()
    return [job_from_row(r) for r in rows]


def states_of(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, JobState]:
    id_list = list(ids)
    if not id_list:
        return {}
    sql = f"SELECT id, state FROM jobs WHERE id IN ({_marks(id_list)})"
    return {i: JobState(s) for i, s in conn.execute(sql, id_list).fetchall()}


def state_counts(conn: sqlite3.Connection) -> dict[str, int]:
    # kept by triggers (schema migration 10): nine rows, however long the history
    rows = conn.execute("SELECT state, n FROM job_counts WHERE n > 0").fetchall()
    return {state: n for state, n in rows}


def finished_ids(conn: sqlite3.Connection, before: float | None) -> list[int]:
    """Finished jobs (ended before `before`, if given): what `job purge` forgets."""
    states = [str(s) for s in FINISHED_STATES]
    sql = f"SELECT id FROM jobs WHERE state IN ({_marks(states)})"
    args: list[Any] = list(states)
    if before is not None:
        sql += " AND COALESCE(ended_at, created_at) < ?"
        args.append(before)
    return [r[0] for r in conn.execute(sql, args).fetchall()]
