"""Windows on the history of a big queue: the newest finished jobs that match a filter,
per array how many members are in each state, the snapshots jobs still reference.

Each query walks an index in id order and stops after the rows it was asked for, so
its cost does not grow with the number of jobs the queue has ever finished."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import msgspec

from nvq.model import JobRecord, JobState
from nvq.store.jobs import JOB_COLUMNS, job_from_row


class JobFilter(msgspec.Struct, frozen=True, kw_only=True):
    """What `job ls` narrows a listing to; every field left empty matches all."""

    user: str | None = None
    tag: str | None = None
    array: int | None = None
    since_id: int | None = None  # this job and later ones
    since_time: float | None = None  # submitted at or after this time

    def matches(self, job: JobRecord) -> bool:
        """The same test as `_where`, on a job in memory."""
        return (
            (self.user is None or job.user == self.user)
            and (self.tag is None or self.tag in job.spec.tags)
            and (self.array is None or job.array_id == self.array)
            and (self.since_id is None or job.id >= self.since_id)
            and (self.since_time is None or job.created_at >= self.since_time)
        )


def _where(flt: JobFilter) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if flt.user is not None:
        where.append("user = ?")
        args.append(flt.user)
    if flt.tag is not None:
        where.append("EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = ?)")
        args.append(flt.tag)
    if flt.array is not None:
        where.append("array_id = ?")
        args.append(flt.array)
    if flt.since_id is not None:
        where.append("id >= ?")
        args.append(flt.since_id)
    if flt.since_time is not None:
        where.append("created_at >= ?")
        args.append(flt.since_time)
    return where, args


def newest(
    conn: sqlite3.Connection, states: Iterable[JobState], flt: JobFilter, limit: int | None
) -> tuple[list[JobRecord], bool]:
    """The newest `limit` jobs (all with None) in `states` that match `flt`, oldest
    first, and whether more matched than were returned."""
    where, args = _where(flt)
    found: list[JobRecord] = []
    # One query per state: `state = ?` walks the (state, id) index backwards and stops
    # at `limit`; `state IN (…)` would have to sort every finished row first.
    for st in sorted(states):
        sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE " + " AND ".join(["state = ?", *where])
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit) + 1}"
        found += [job_from_row(r) for r in conn.execute(sql, [str(st), *args])]
    found.sort(key=lambda j: j.id, reverse=True)
    more = limit is not None and len(found) > limit
    kept = found[:limit] if limit is not None else found
    kept.reverse()
    return kept, more


def array_counts(conn: sqlite3.Connection, array_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """Per array, its members' count in each state (through the array index)."""
    out: dict[int, dict[str, int]] = {}
    for array_id in array_ids:
        rows = conn.execute(
            "SELECT state, COUNT(*) FROM jobs WHERE array_id = ? GROUP BY state", (array_id,)
        )
        out[array_id] = {st: n for st, n in rows}
    return out


def manifest_ids(conn: sqlite3.Connection) -> set[str]:
    """Every snapshot (and staged image) a job in the queue (in any state) references."""
    rows = conn.execute("SELECT DISTINCT manifest_id FROM jobs WHERE manifest_id IS NOT NULL "
                        "UNION SELECT image_manifest FROM jobs WHERE image_manifest IS NOT NULL")
    return {r[0] for r in rows}
