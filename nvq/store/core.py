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

from nvq.model import Event, Job, JobState, Reap, Tx
from nvq.store import alerts, events, jobs, lanes, nodes, schema
from nvq.store.nodes import NodeRecord

T = TypeVar("T")

_json = msgspec.json.Encoder()


class Store:
    """The daemon's handle on queue.db. Open with `await Store.open(path)`."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

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
        await store.sync(schema.migrate)
        return store

    async def close(self) -> None:
        await self._db.close()

    async def sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(connection)` on the database thread: for the table modules of this
        package and for the online backup."""
        result: T = await self._db._execute(fn, self._db._conn)
        return result

    # ------------------------------------------------------------ writes

    async def commit(self, tx: Tx) -> list[Job]:
        """Apply `tx` in one transaction; returns the inserted jobs with their ids."""
        # One hop to the database thread for the whole transaction instead of one per
        # statement keeps a transition to a single round trip.
        return await self.sync(lambda conn: _commit(conn, tx))

    async def next_job_id(self) -> int:
        """The id the next inserted job gets (the daemon, the only writer, holds its
        lock between asking and committing)."""
        return await self.sync(jobs.last_id) + 1

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
            lambda conn: nodes.save(
                conn, name, facts=facts, last_seen=last_seen, drained=drained, ignored=ignored
            )
        )

    # ------------------------------------------------------------ reads

    async def job(self, job_id: int) -> Job | None:
        return await self.sync(lambda conn: jobs.one(conn, job_id))

    async def jobs(
        self,
        *,
        states: Iterable[JobState] | None = None,
        ids: Iterable[int] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Job]:
        return await self.sync(
            lambda conn: jobs.select(
                conn, states=states, ids=ids, limit=limit, newest_first=newest_first
            )
        )

    async def array_members(self, array_id: int) -> list[Job]:
        return await self.sync(lambda conn: jobs.array_members(conn, array_id))

    async def states_of(self, ids: Iterable[int]) -> dict[int, JobState]:
        return await self.sync(lambda conn: jobs.states_of(conn, ids))

    async def state_counts(self) -> dict[str, int]:
        return await self.sync(jobs.state_counts)

    async def finished_ids(self, before: float | None) -> list[int]:
        """Finished jobs (ended before `before`, if given): what `job purge` forgets."""
        return await self.sync(lambda conn: jobs.finished_ids(conn, before))

    async def events(
        self, *, since: int = 0, job_id: int | None = None, limit: int | None = None
    ) -> list[Event]:
        return await self.sync(
            lambda conn: events.select(conn, since=since, job_id=job_id, limit=limit)
        )

    async def lanes(self) -> dict[str, bool]:
        return await self.sync(lanes.paused)

    async def nodes(self) -> dict[str, NodeRecord]:
        return await self.sync(nodes.records)

    async def reaps(self) -> list[Reap]:
        return await self.sync(nodes.reaps)


def _commit(conn: sqlite3.Connection, tx: Tx) -> list[Job]:
    now = time.time()
    inserted: list[Job] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows: list[events.EventRow] = []
        if tx.new_jobs:
            # Ids are taken here, under the write lock, so a batch (an array of
            # 10,000) is one executemany instead of one INSERT per row. A job
            # that comes with an id (see `next_job_id`) keeps it.
            base = jobs.last_id(conn)
            for job in tx.new_jobs:
                if not job.id:
                    base += 1
                    job.id = base
                if not job.rank:  # the dispatch sequence: see nvq.domain.ordering
                    job.rank = float(job.id)
                base = max(base, job.id)
                inserted.append(job)
                rows.append((now, "job_submitted", job.id, None, "{}"))
            jobs.insert(conn, tx.new_jobs)
        if tx.jobs:
            jobs.update(conn, tx.jobs)
        for ev in tx.events:
            rows.append((now, ev.kind, ev.job_id, ev.node, _json.encode(ev.data).decode()))
        if rows:
            events.insert(conn, rows)
        if tx.node_seq is not None:
            nodes.set_seq(conn, tx.node_seq)
        if tx.add_reaps:
            nodes.add_reaps(conn, tx.add_reaps)
        if tx.drop_reaps:
            nodes.drop_reaps(conn, tx.drop_reaps)
        if tx.delete_jobs:
            jobs.delete(conn, tx.delete_jobs)
        if tx.lanes:
            lanes.save(conn, tx.lanes)
        if tx.alerts or tx.outbox:
            alerts.write(conn, tx.alerts, tx.outbox, now)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        for job in inserted:
            job.id = 0
        raise
    return inserted
