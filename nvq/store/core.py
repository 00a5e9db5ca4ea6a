"""The daemon's handle on queue.db: open (and migrate), commit a transition, read.

The daemon is the only writer. Every change goes through `Store.commit(tx)`, one SQLite
transaction holding the job rows, their `events` rows, the node's applied `seq` and
the pending kills, so a crash leaves either all of a transition or none of it. The SQL
of each table lives in its own module of this package; this class runs it on the
connection's thread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import msgspec

from nvq.domain.alerts import resolutions
from nvq.model import Event, Job, JobState, Reap, Tx

# Aliased: Store's read methods carry the tables' names.
from nvq.store import alerts as alert_table
from nvq.store import events as event_table
from nvq.store import jobs as job_table
from nvq.store import lanes as lane_table
from nvq.store import nodes as node_table
from nvq.store import schema
from nvq.store.nodes import NodeRecord

T = TypeVar("T")

_json = msgspec.json.Encoder()


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
        try:
            await store.sync(schema.migrate)
        except BaseException:
            # aiosqlite's thread outlives an unclosed connection and keeps the
            # process from exiting.
            await db.close()
            raise
        return store

    async def close(self) -> None:
        await self._db.close()

    async def sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(connection)` on the database thread: for the table modules of this
        package and for the online backup."""
        # aiosqlite's own queue runs `fn` on its thread, in order with every other call.
        result: T = await self._db._execute(fn, self._db._conn)  # type: ignore[no-untyped-call]
        return result

    # ------------------------------------------------------------ writes

    async def commit(self, tx: Tx) -> list[Job]:
        """Apply `tx` in one transaction; returns the inserted jobs with their ids. The
        events it recorded, with their ids, are in `last_events` until the next commit."""
        # One hop to the database thread for the whole transaction instead of one per
        # statement keeps a transition to a single round trip.
        inserted, self.last_events = await self.sync(lambda conn: _commit(conn, tx))
        return inserted

    async def next_job_id(self) -> int:
        """The id the next inserted job gets (the daemon, the only writer, holds its
        lock between asking and committing)."""
        return await self.sync(job_table.last_id) + 1

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
        await self.sync(
            lambda conn: node_table.save(
                conn, name, facts=facts, last_seen=last_seen, drained=drained, ignored=ignored
            )
        )

    # ------------------------------------------------------------ reads

    async def job(self, job_id: int) -> Job | None:
        return await self.sync(lambda conn: job_table.one(conn, job_id))

    async def jobs(
        self,
        *,
        states: Iterable[JobState] | None = None,
        ids: Iterable[int] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Job]:
        return await self.sync(
            lambda conn: job_table.select(
                conn, states=states, ids=ids, limit=limit, newest_first=newest_first
            )
        )

    async def array_members(self, array_id: int) -> list[Job]:
        return await self.sync(lambda conn: job_table.array_members(conn, array_id))

    async def states_of(self, ids: Iterable[int]) -> dict[int, JobState]:
        return await self.sync(lambda conn: job_table.states_of(conn, ids))

    async def state_counts(self) -> dict[str, int]:
        return await self.sync(job_table.state_counts)

    async def finished_ids(self, before: float | None) -> list[int]:
        """Finished jobs (ended before `before`, if given): what `job purge` forgets."""
        return await self.sync(lambda conn: job_table.finished_ids(conn, before))

    async def events(
        self, *, since: int = 0, job_id: int | None = None, limit: int | None = None
    ) -> list[Event]:
        return await self.sync(
            lambda conn: event_table.select(conn, since=since, job_id=job_id, limit=limit)
        )

    async def lanes(self) -> dict[str, bool]:
        return await self.sync(lane_table.paused)

    async def nodes(self) -> dict[str, NodeRecord]:
        return await self.sync(node_table.records)

    async def reaps(self) -> list[Reap]:
        return await self.sync(node_table.reaps)


def _commit(conn: sqlite3.Connection, tx: Tx) -> tuple[list[Job], list[Event]]:
    now = time.time()
    inserted: list[Job] = []
    recorded: list[Event] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows: list[event_table.EventRow] = []
        if tx.new_jobs:
            # Ids are taken here, under the write lock, so a batch (an array of
            # 10,000) is one executemany instead of one INSERT per row. A job
            # that comes with an id (see `next_job_id`) keeps it.
            base = job_table.last_id(conn)
            for job in tx.new_jobs:
                if not job.id:
                    base += 1
                    job.id = base
                if not job.rank:  # the dispatch sequence: see nvq.domain.ordering
                    job.rank = float(job.id)
                base = max(base, job.id)
                inserted.append(job)
                rows.append((now, "job_submitted", job.id, None, "{}"))
            job_table.insert(conn, tx.new_jobs)
        if tx.jobs:
            job_table.update(conn, tx.jobs)
        for ev in tx.events:
            rows.append((now, ev.kind, ev.job_id, ev.node, _json.encode(ev.data).decode()))
        if rows:
            recorded = event_table.insert(conn, rows)
        if tx.node_seq is not None:
            node_table.set_seq(conn, tx.node_seq)
        if tx.add_reaps:
            node_table.add_reaps(conn, tx.add_reaps)
        if tx.drop_reaps:
            node_table.drop_reaps(conn, tx.drop_reaps)
        if tx.delete_jobs:
            job_table.delete(conn, tx.delete_jobs)
        if tx.lanes:
            lane_table.save(conn, tx.lanes)
        if tx.alerts or tx.outbox:
            alert_table.write(conn, tx.alerts, tx.outbox, now)
        if tx.events:
            alert_table.resolve(conn, resolutions(tx.events), now)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        for job in inserted:
            job.id = 0
        raise
    return inserted, recorded
