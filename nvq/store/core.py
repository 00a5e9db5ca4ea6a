"""The daemon's handle on queue.db: open (and migrate), commit a transition, read.

The daemon is the only writer. Every change goes through `Store.commit(tx)`, one SQLite
transaction holding the job rows, their `events` rows, the node's applied `seq` and
the pending kills, so a crash leaves either all of a transition or none of it. The SQL
of each table lives in its own module of this package; this class runs it on the
connection's thread.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio
import msgspec

from nvq.domain.alerts import resolutions
from nvq.domain.fair_share import Usage
from nvq.errors import Internal
from nvq.model import Charge, Event, JobRecord, JobState, Reap, Tx
from nvq.store import (
    alerts,
    events,
    integrity,
    jobs,
    lanes,
    meta,
    nodes,
    run_times,
    schema,
    space,
    usage,
    windows,
)
from nvq.store.nodes import NodeRecord

T = TypeVar("T")

_json = msgspec.json.Encoder()
log = logging.getLogger("nvq.store")

QUEUE_ID = "queue_id"


class StoreError(Internal):
    """queue.db cannot be opened: one line for the user, naming the way out."""


def store_error(path: Path, exc: BaseException) -> StoreError | None:
    """What opening or loading queue.db failed with, as the one line the daemon
    prints; None for what nvq does not expect (a cancel, a bug), which goes on as it
    is."""
    if isinstance(exc, schema.SchemaTooNew):
        return StoreError(f"{exc} ({path})")
    if space.not_a_database(exc):
        what = "is damaged" if "malformed" in str(exc) else "is not a database"
        return StoreError(
            f"queue.db {what} ({path}: {exc}): restore a backup with nvq queue restore"
        )
    if isinstance(exc, sqlite3.Error | OSError):
        return StoreError(f"cannot open queue.db ({path}): {exc}")
    return None


class Store:
    """The daemon's handle on queue.db. Open with `await Store.open(path)`."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self.last_events: list[Event] = []  # the last commit's, with their ids
        self.queue_id = ""  # this queue's identity to the runners (the meta table)
        # While writes fail for a full disk: since when, and how many wait.
        self.disk_full_since: float | None = None
        self.writes_waiting = 0
        # The last spell of a full disk, (from, to), until the daemon reports it.
        self.disk_was_full: tuple[float, float] | None = None
        self._full = anyio.Event()  # set while the disk is full (see until_full)

    @classmethod
    async def open(cls, path: Path) -> Store:
        db = await aiosqlite.connect(path, isolation_level=None)
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            # FULL makes every commit durable (the WAL is fsynced): a transition the
            # daemon acted on is never forgotten after a power cut.
            await db.execute("PRAGMA synchronous=FULL")
            await db.execute("PRAGMA foreign_keys=ON")
            await db.execute("PRAGMA busy_timeout=5000")
            store = cls(db)
            await store.sync(schema.migrate)
            store.queue_id = await store.sync(_queue_id)
        except BaseException as exc:
            # The connection's thread would keep a failed daemon alive: end it first,
            # whatever went wrong (a cancel, a bug, a schema from a newer nvq).
            with anyio.CancelScope(shield=True):
                await db.close()
            error = store_error(path, exc)
            if error is None:
                raise
            raise error from None
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

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`sync` for a write: while the disk is full it is tried again with back-off
        (reads go on between tries), so the caller only goes on once it is durable."""
        wait = space.FIRST_WAIT
        counted = False
        try:
            while True:
                try:
                    result = await self.sync(fn)
                except (sqlite3.OperationalError, OSError) as exc:
                    if not space.is_disk_full(exc):
                        raise
                    if self.disk_full_since is None:
                        log.error("queue.db cannot be written (%s): writes wait for space", exc)
                    self.space_low()
                    if not counted:
                        counted = True
                        self.writes_waiting += 1
                    await anyio.sleep(wait)
                    wait = space.next_wait(wait)
                    continue
                if counted:
                    self.space_returned()  # this write waited and went through
                return result
        finally:
            if counted:
                self.writes_waiting -= 1

    def space_low(self) -> None:
        """The disk holding queue.db has (next to) no space left, whether or not a
        write failed yet (a runner on the same disk cannot even report exits)."""
        if self.disk_full_since is None:
            self.disk_full_since = time.time()
            self._full.set()
            log.error("disk full on the queue host")

    async def until_full(self) -> None:
        """Return once the disk is full (at once while it is)."""
        await self._full.wait()

    def space_returned(self) -> None:
        """Writes can go through again: the spell is over, to be reported once."""
        if self.disk_full_since is not None:
            log.warning("the queue host has space again: waiting writes go on")
            self.disk_was_full = (self.disk_full_since, time.time())
            self.disk_full_since = None
            self._full = anyio.Event()

    async def commit(self, tx: Tx) -> list[JobRecord]:
        """Apply `tx` in one transaction; returns the inserted jobs with their ids. The
        events it recorded, with their ids, are in `last_events` until the next commit."""
        # One hop to the database thread for the whole transaction instead of one per
        # statement keeps a transition to a single round trip.
        inserted, self.last_events = await self.write(lambda conn: _commit(conn, tx))
        return inserted

    async def raise_last_id(self, floor: int) -> bool:
        """Ids of new jobs continue after `floor` (see `jobs.raise_last_id`)."""
        return await self.write(lambda conn: jobs.raise_last_id(conn, floor))

    async def last_job_id(self) -> int:
        return await self.sync(jobs.last_id)

    async def integrity(self) -> str:
        """`PRAGMA integrity_check`: "ok", or what it found."""
        return await self.sync(integrity.integrity_of)

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
        await self.write(
            lambda conn: nodes.save(
                conn, name, facts=facts, last_seen=last_seen, drained=drained, ignored=ignored
            )
        )

    # ------------------------------------------------------------ reads

    async def job(self, job_id: int) -> JobRecord | None:
        return await self.sync(lambda conn: jobs.one(conn, job_id))

    async def jobs(
        self,
        *,
        states: Iterable[JobState] | None = None,
        ids: Iterable[int] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[JobRecord]:
        return await self.sync(
            lambda conn: jobs.select(
                conn, states=states, ids=ids, limit=limit, newest_first=newest_first
            )
        )

    async def newest_jobs(
        self, states: Iterable[JobState], flt: windows.JobFilter, limit: int | None
    ) -> tuple[list[JobRecord], bool]:
        """The newest `limit` jobs in `states` matching `flt`, and whether there are more."""
        return await self.sync(lambda conn: windows.newest(conn, states, flt, limit))

    async def array_counts(self, array_ids: Iterable[int]) -> dict[int, dict[str, int]]:
        return await self.sync(lambda conn: windows.array_counts(conn, array_ids))

    async def manifest_ids(self) -> set[str]:
        return await self.sync(windows.manifest_ids)

    async def run_times(
        self, commands: Collection[str], arrays: Collection[int]
    ) -> tuple[dict[str, list[float]], dict[int, list[float]]]:
        """Completed runs' durations per command and per array (nvq.store.run_times)."""
        return await self.sync(lambda conn: run_times.run_times(conn, commands, arrays))

    async def array_members(self, array_id: int) -> list[JobRecord]:
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

    async def meta(self, key: str) -> str | None:
        return await self.sync(lambda conn: meta.get_meta(conn, key))

    async def usage(self) -> dict[str, Usage]:
        """Fair share's ledger: each account's decayed GPU-seconds."""
        return await self.sync(usage.ledger)

    async def charges_since(self, since: float) -> list[Charge]:
        return await self.sync(lambda conn: usage.ended_since(conn, since))


def _queue_id(conn: sqlite3.Connection) -> str:
    return meta.get_meta(conn, QUEUE_ID) or ""


def _commit(conn: sqlite3.Connection, tx: Tx) -> tuple[list[JobRecord], list[Event]]:
    now = time.time()
    inserted: list[JobRecord] = []
    recorded: list[Event] = []
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
                base = max(base, job.id)
                if not job.rank:  # the dispatch sequence: see nvq.domain.ordering
                    job.rank = float(job.id)
                inserted.append(job)
                rows.append((now, "job_submitted", job.id, None, "{}"))
            jobs.insert(conn, tx.new_jobs)
        if tx.jobs:
            jobs.update(conn, tx.jobs)
        for ev in tx.events:
            rows.append((now, ev.kind, ev.job_id, ev.node, _json.encode(ev.data).decode()))
        if rows:
            recorded = events.insert(conn, rows)
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
        for key, value in tx.meta:
            meta.set_meta(conn, key, value)
        if tx.usage or tx.charges:
            usage.save(conn, tx.usage, tx.charges)
        if tx.alerts or tx.outbox:
            alerts.write(conn, tx.alerts, tx.outbox, now)
        if tx.events:
            alerts.resolve(conn, resolutions(tx.events), now)
        conn.execute("COMMIT")
    except BaseException:
        # A full disk may have ended the transaction already.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        for job in inserted:
            job.id = 0
        raise
    return inserted, recorded
