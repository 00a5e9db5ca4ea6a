"""The live event stream (`Subscribe`): the store's backlog after `since`, then each
commit's events as `Held.commit` hands them to the fan-out (`nvq.daemon.core.subscribers`).

Streamed like `nvq logs`: the control server sends each yielded payload as a `Chunk`."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator

from nvq import control as c
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.state import State
from nvq.daemon.core.subscribers import Subscriber
from nvq.daemon.handlers.stream_lines import StreamFilter, check_jobs, filter_of, lines
from nvq.daemon.handlers.visibility import Viewer, event_job_ids, shown_to
from nvq.model import Event

BACKLOG_PAGE = 1000  # events per chunk while catching up from the store


class FellBehind(RequestError):
    """The subscriber's buffer overflowed: it must subscribe again from `last_id`."""

    def __init__(self, last_id: int) -> None:
        super().__init__(f"the event stream fell behind; subscribe again from event {last_id}")
        self.last_id = last_id


def _last_event_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(id) FROM events").fetchone()
    return int(row[0] or 0)


async def subscribe(
    state: State, req: c.Subscribe, viewer: Viewer | None = None
) -> AsyncIterator[bytes]:
    """msgpack `list[Event]` payloads, oldest first, each event once, for as long as
    the caller iterates. Raises `FellBehind` when the reader is too slow. The reader
    counts from the moment of this call (for `since` -1), not of the first read.
    `viewer`: who reads, for what of other users' jobs they may see (None: everything).
    Raises BadRequest for a filter that names no job or no `--kind` word."""
    wanted = filter_of(req, viewer)
    await check_jobs(state, wanted)
    # Registered before the backlog is read: a commit in between is then both in the
    # store and in the buffer, and the id check in `_stream` sends it once.
    sub = state.subscribers.add()
    try:
        since = req.since if req.since >= 0 else await state.store.sync(_last_event_id)
    except BaseException:
        state.subscribers.remove(sub)
        raise
    return _stream(state, sub, since, wanted, viewer)


async def _shown(state: State, page: list[Event], viewer: Viewer | None) -> list[Event]:
    if viewer is None or viewer.user in viewer.admins:
        return page
    ids = event_job_ids(page)
    owners = {j.id: j.user for j in await state.store.jobs(ids=sorted(ids))} if ids else {}
    shown: list[Event] = shown_to(page, viewer, owners)
    return shown


async def _stream(
    state: State, sub: Subscriber, last: int, wanted: StreamFilter, viewer: Viewer | None
) -> AsyncIterator[bytes]:
    # One job: the store reads its events alone; several: every event, filtered here.
    job_id = next(iter(wanted.jobs)) if len(wanted.jobs) == 1 else None
    try:
        while True:
            page = await state.store.events(since=last, job_id=job_id, limit=BACKLOG_PAGE)
            if page:
                last = page[-1].id
                shown = await lines(state, page, wanted, viewer, live=False)
                if shown:
                    yield c.encoder.encode(await _shown(state, shown, viewer))
            if len(page) < BACKLOG_PAGE:
                break
        while True:
            fresh = await sub.take()
            if sub.overflowed:
                raise FellBehind(last)
            batch = [e for e in fresh if e.id > last]
            if batch:
                last = batch[-1].id
                shown = await lines(state, batch, wanted, viewer)
                if shown:
                    yield c.encoder.encode(await _shown(state, shown, viewer))
    finally:
        state.subscribers.remove(sub)
