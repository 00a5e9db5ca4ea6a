"""Watching the disk that holds queue.db: a full one is shown in `queue status` at
once (before any write fails: a runner on the same disk cannot even report exits),
and raises an alert once space returns."""

from __future__ import annotations

import logging
import os

import anyio

from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.home import Home

log = logging.getLogger("nvq.daemon")

LOW_BYTES = 1024 * 1024  # less than this free: SQLite cannot count on its next page
INTERVAL = 1.0


def free_bytes(path: os.PathLike[str] | str) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


async def watch_disk(state: State) -> None:
    where = Home(state.home).db.parent
    while True:
        free = free_bytes(where)
        store = state.store
        if free is not None and free < LOW_BYTES:
            store.space_low()
        elif store.disk_full_since is not None and store.writes_waiting == 0:
            store.space_returned()
        if store.disk_was_full is not None:
            async with locked(state):
                await state.report_full_disk()
        await anyio.sleep(INTERVAL)
