"""The queue's database: schema, migrations, and transitions committed with their events.

The daemon is the only writer. Every change goes through `Store.commit(tx)`, one SQLite
transaction holding the job rows, their `events` rows, the node's applied `seq` and
the pending kills, so a crash leaves either all of a transition or none of it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import msgspec

from nvq import machines_db, opsdb
from nvq.model import Event, Job, JobState, Reap, Tx

SCHEMA_VERSION = 4

# Each entry migrates from version i to i+1; the list only ever grows.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        state TEXT NOT NULL,
        command TEXT NOT NULL,
        user TEXT NOT NULL,
        submitter TEXT NOT NULL,
        created_at REAL NOT NULL,
        gpus_requested INTEGER NOT NULL,
        vram_mb INTEGER NOT NULL,
        node_request TEXT,
        priority INTEGER NOT NULL,
        timeout REAL,
        env TEXT NOT NULL,
        workdir TEXT,
        tags TEXT NOT NULL,
        note TEXT NOT NULL,
        after TEXT NOT NULL,
        after_any TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node TEXT,
        gpus TEXT NOT NULL,
        pid INTEGER,
        dispatched_at REAL,
        started_at REAL,
        ended_at REAL,
        exit_code INTEGER,
        signal INTEGER,
        reason TEXT,
        progress TEXT,
        stderr_tail TEXT,
        result TEXT
    );
    CREATE INDEX jobs_by_state ON jobs(state);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL,
        kind TEXT NOT NULL,
        job_id INTEGER,
        node TEXT,
        data TEXT NOT NULL
    );
    CREATE INDEX events_by_job ON events(job_id);
    CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        journal_id TEXT NOT NULL DEFAULT '',
        applied_seq INTEGER NOT NULL DEFAULT 0,
        facts TEXT,
        last_seen REAL,
        drained INTEGER NOT NULL DEFAULT 0,
        ignored INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE reaps (
        job_id INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        node TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (job_id, attempt)
    );
    """,
    # 2: scheduling policy — dispatch rank, retries, CUDA/memory needs, arrays, lanes.
    """
    ALTER TABLE jobs ADD COLUMN rank REAL NOT NULL DEFAULT 0;
    UPDATE jobs SET rank = created_at;
    ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN cuda TEXT;
    ALTER TABLE jobs ADD COLUMN memory_mb INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN array_id INTEGER;
    ALTER TABLE jobs ADD COLUMN array_index INTEGER;
    ALTER TABLE jobs ADD COLUMN array_limit INTEGER;
    ALTER TABLE jobs ADD COLUMN lane TEXT;
    ALTER TABLE jobs ADD COLUMN lane_pos REAL;
    CREATE INDEX jobs_by_array ON jobs(array_id);
    CREATE TABLE lanes (
        name TEXT PRIMARY KEY,
        paused INTEGER NOT NULL DEFAULT 0
    );
    """,
    # 3: operating the queue — alerts, the notification outbox, meta (last backup),
    # per-job e-mail preferences.
    opsdb.MIGRATION,
    # 4: machines that come and go (issue 5) — see nvq.machines_db.
    machines_db.MIGRATION,
]

T = TypeVar("T")

_JOB_FIELDS: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(Job))
_JSON_FIELDS = frozenset(
    {
        "env",
        "tags",
        "gpus",
        "result",
        "after",
        "after_any",
        "email_on_success",
        "email_on_failure",
        "no_reassign",
    }
)
_json = msgspec.json.Encoder()


def _job_to_row(job: Job) -> list[Any]:
    row: list[Any] = []
    for name in _JOB_FIELDS:
        value = getattr(job, name)
        if name in _JSON_FIELDS:
            value = _json.encode(value).decode()
        elif name == "state":
            value = str(value)
        row.append(value)
    return row


def job_from_row(row: Sequence[Any]) -> Job:
    values: dict[str, Any] = {}
    for name, value in zip(_JOB_FIELDS, row, strict=True):
        if name in _JSON_FIELDS:
            value = msgspec.json.decode(value) if value is not None else None
        elif name == "state":
            value = JobState(value)
        values[name] = value
    return Job(**values)


JOB_COLUMNS = ", ".join(_JOB_FIELDS)
_JOB_PLACEHOLDERS = ", ".join("?" for _ in _JOB_FIELDS)
_JOB_UPDATE = ", ".join(f"{name} = ?" for name in _JOB_FIELDS if name != "id")


def _recorded_events(
    rows: list[tuple[float, str, int | None, str | None, str]], last_id: int
) -> list[Event]:
    """The rows just inserted into `events`, as `Store.events` would read them back."""
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


class NodeRecord(msgspec.Struct):
    name: str
    journal_id: str
    applied_seq: int
    facts: dict[str, Any] | None
    last_seen: float | None
    drained: bool
    ignored: bool


class Store:
    """The daemon's handle on queue.db. Open with `await Store.open(path)`."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self.last_events: list[Event] = []

    @classmethod
    async def open(cls, path: Path) -> Store:
        db = await aiosqlite.connect(path, isolation_level=None)
        await db.execute("PRAGMA journal_mode=WAL")
        # FULL makes every commit durable (the WAL is fsynced): a transition the
        # daemon acted on is never forgotten after a power cut.
        await db.execute("PRAGMA synchronous=FULL")
        await db.execute("PRAGMA foreign_keys=ON")
        await db.execute("PRAGMA busy_timeout=5000")
        store = cls(db)
        await store._migrate()
        return store

    async def close(self) -> None:
        await self._db.close()

    async def _migrate(self) -> None:
        await self._db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER)")
        async with self._db.execute("SELECT version FROM schema_version") as cur:
            row = await cur.fetchone()
        version = row[0] if row else 0
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"queue.db has schema version {version}, newer than this nvq knows "
                f"({SCHEMA_VERSION}); upgrade nvq"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[target - 1].split(";"):
                    if statement.strip():
                        await self._db.execute(statement)
                await self._db.execute("DELETE FROM schema_version")
                await self._db.execute("INSERT INTO schema_version VALUES (?)", (target,))
                await self._db.execute("COMMIT")
            except BaseException:
                await self._db.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------ writes

    async def commit(self, tx: Tx) -> list[Job]:
        """Apply `tx` in one transaction; returns the inserted jobs with their ids. The
        events it recorded, with their ids, are in `last_events` until the next commit."""
        inserted, self.last_events = await self._db._execute(self._commit_sync, tx)
        return inserted

    def _commit_sync(self, tx: Tx) -> tuple[list[Job], list[Event]]:
        # Runs on aiosqlite's thread: one hop for the whole transaction instead of
        # one per statement keeps a transition to a single round trip.
        conn: sqlite3.Connection = self._db._conn
        now = time.time()
        inserted: list[Job] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            events: list[tuple[float, str, int | None, str | None, str]] = []
            recorded: list[Event] = []
            if tx.new_jobs:
                # Ids are taken here, under the write lock, so a batch (an array of
                # 10,000) is one executemany instead of one INSERT per row. A job
                # that comes with an id (see `next_job_id`) keeps it.
                base = self._last_job_id(conn)
                for job in tx.new_jobs:
                    if not job.id:
                        base += 1
                        job.id = base
                    base = max(base, job.id)
                    inserted.append(job)
                    events.append((now, "job_submitted", job.id, None, "{}"))
                conn.executemany(
                    f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({_JOB_PLACEHOLDERS})",
                    [_job_to_row(job) for job in tx.new_jobs],
                )
            if tx.jobs:
                conn.executemany(
                    f"UPDATE jobs SET {_JOB_UPDATE} WHERE id = ?",
                    [[*_job_to_row(job)[1:], job.id] for job in tx.jobs],
                )
            for ev in tx.events:
                events.append((now, ev.kind, ev.job_id, ev.node, _json.encode(ev.data).decode()))
            if events:
                conn.executemany(
                    "INSERT INTO events (time, kind, job_id, node, data) VALUES (?, ?, ?, ?, ?)",
                    events,
                )
                # One writer, one statement: the rows took consecutive ids ending here.
                last_id = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
                recorded = _recorded_events(events, last_id)
            if tx.node_seq is not None:
                conn.execute(
                    "INSERT INTO nodes (name, journal_id, applied_seq) VALUES (?, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET journal_id = excluded.journal_id, "
                    "applied_seq = excluded.applied_seq",
                    (tx.node_seq.node, tx.node_seq.journal_id, tx.node_seq.seq),
                )
            if tx.add_reaps:
                conn.executemany(
                    "INSERT OR REPLACE INTO reaps (job_id, attempt, node, reason) "
                    "VALUES (?, ?, ?, ?)",
                    [(r.job_id, r.attempt, r.node, r.reason) for r in tx.add_reaps],
                )
            if tx.drop_reaps:
                conn.executemany(
                    "DELETE FROM reaps WHERE job_id = ? AND attempt = ?", tx.drop_reaps
                )
            if tx.delete_jobs:
                conn.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in tx.delete_jobs])
            if tx.lanes:
                conn.executemany(
                    "INSERT INTO lanes (name, paused) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET paused = excluded.paused",
                    [(name, int(paused)) for name, paused in tx.lanes],
                )
            if tx.alerts or tx.outbox:
                opsdb.write(conn, tx.alerts, tx.outbox, now)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            for job in inserted:
                job.id = 0
            raise
        return inserted, recorded

    async def sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(connection)` on the database thread: for modules with their own tables
        (nvq.opsdb) and for the online backup."""
        result: T = await self._db._execute(fn, self._db._conn)
        return result

    @staticmethod
    def _last_job_id(conn: sqlite3.Connection) -> int:
        # AUTOINCREMENT never reuses an id, even of a purged job: continue from the
        # sequence, not from MAX(id).
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'jobs'").fetchone()
        return int(row[0]) if row else 0

    async def next_job_id(self) -> int:
        """The id the next inserted job gets (the daemon, the only writer, holds its
        lock between asking and committing)."""
        return await self.sync(self._last_job_id) + 1

    async def lanes(self) -> dict[str, bool]:
        async with self._db.execute("SELECT name, paused FROM lanes") as cur:
            return {name: bool(paused) for name, paused in await cur.fetchall()}

    async def finished_ids(self, before: float | None) -> list[int]:
        """Finished jobs (ended before `before`, if given): what `job purge` forgets."""
        from nvq.model import FINISHED_STATES

        states = [str(s) for s in FINISHED_STATES]
        sql = f"SELECT id FROM jobs WHERE state IN ({', '.join('?' for _ in states)})"
        args: list[Any] = list(states)
        if before is not None:
            sql += " AND COALESCE(ended_at, created_at) < ?"
            args.append(before)
        async with self._db.execute(sql, args) as cur:
            return [r[0] for r in await cur.fetchall()]

    async def save_node(
        self,
        name: str,
        *,
        facts: dict[str, Any] | None = None,
        last_seen: float | None = None,
        drained: bool | None = None,
        ignored: bool | None = None,
    ) -> None:
        """Node bookkeeping that is not a job transition (facts, flags, last seen)."""
        await self._db.execute("INSERT OR IGNORE INTO nodes (name) VALUES (?)", (name,))
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
            await self._db.execute(
                f"UPDATE nodes SET {', '.join(sets)} WHERE name = ?", (*args, name)
            )

    # ------------------------------------------------------------ reads

    async def job(self, job_id: int) -> Job | None:
        async with self._db.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)
        ) as cur:
            row = await cur.fetchone()
        return job_from_row(row) if row else None

    async def jobs(
        self,
        *,
        states: Iterable[JobState] | None = None,
        ids: Iterable[int] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Job]:
        where: list[str] = []
        args: list[Any] = []
        if states is not None:
            state_list = [str(s) for s in states]
            where.append(f"state IN ({', '.join('?' for _ in state_list)})")
            args.extend(state_list)
        if ids is not None:
            id_list = list(ids)
            where.append(f"id IN ({', '.join('?' for _ in id_list)})")
            args.extend(id_list)
        sql = f"SELECT {JOB_COLUMNS} FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC" if newest_first else " ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        async with self._db.execute(sql, args) as cur:
            rows = await cur.fetchall()
        return [job_from_row(r) for r in rows]

    async def array_members(self, array_id: int) -> list[Job]:
        async with self._db.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE array_id = ? ORDER BY id", (array_id,)
        ) as cur:
            rows = await cur.fetchall()
        return [job_from_row(r) for r in rows]

    async def states_of(self, ids: Iterable[int]) -> dict[int, JobState]:
        id_list = list(ids)
        if not id_list:
            return {}
        sql = f"SELECT id, state FROM jobs WHERE id IN ({', '.join('?' for _ in id_list)})"
        async with self._db.execute(sql, id_list) as cur:
            return {i: JobState(s) for i, s in await cur.fetchall()}

    async def state_counts(self) -> dict[str, int]:
        async with self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state") as cur:
            return {state: n for state, n in await cur.fetchall()}

    async def events(
        self, *, since: int = 0, job_id: int | None = None, limit: int | None = None
    ) -> list[Event]:
        sql = "SELECT id, time, kind, job_id, node, data FROM events WHERE id > ?"
        args: list[Any] = [since]
        if job_id is not None:
            sql += " AND job_id = ?"
            args.append(job_id)
        sql += " ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        async with self._db.execute(sql, args) as cur:
            rows = await cur.fetchall()
        return [
            Event(
                id=r[0],
                time=r[1],
                kind=r[2],
                job_id=r[3],
                node=r[4],
                data=msgspec.json.decode(r[5]),
            )
            for r in rows
        ]

    async def nodes(self) -> dict[str, NodeRecord]:
        async with self._db.execute(
            "SELECT name, journal_id, applied_seq, facts, last_seen, drained, ignored FROM nodes"
        ) as cur:
            rows = await cur.fetchall()
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

    async def reaps(self) -> list[Reap]:
        async with self._db.execute("SELECT job_id, attempt, node, reason FROM reaps") as cur:
            rows = await cur.fetchall()
        return [Reap(job_id=r[0], attempt=r[1], node=r[2], reason=r[3]) for r in rows]
