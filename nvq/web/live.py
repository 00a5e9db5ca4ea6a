"""One subscription to the daemon's event stream per `nvq web` process, fanned out to
every open page: each page's server-sent-event stream wakes on the next event."""

from __future__ import annotations

import logging

import anyio

from nvq.client.asynchronous import AsyncClient
from nvq.client.errors import ClientError
from nvq.model import Event

log = logging.getLogger("nvq.web")

RETRY_AFTER = 1.0  # a daemon that went away (restart, upgrade) is asked again this often


class Hub:
    """The last event seen, and a signal that fires when another arrives."""

    def __init__(self) -> None:
        self.last_id = 0
        self._changed = anyio.Event()

    def publish(self, event: Event) -> None:
        self.last_id = max(self.last_id, event.id)
        self._changed.set()
        self._changed = anyio.Event()

    async def next_after(self, seen: int) -> int:
        """Wait until an event newer than `seen` has arrived; its id."""
        while self.last_id <= seen:
            await self._changed.wait()
        return self.last_id

    async def follow(self, client: AsyncClient) -> None:
        """Feed the hub from the daemon for ever: from now on at first, then from the
        last event seen whenever the stream has to be opened again."""
        while True:
            since = self.last_id or -1
            try:
                async for event in client.subscribe(since):
                    self.publish(event)
            except ClientError as exc:
                log.warning("event stream interrupted: %s", exc)
            await anyio.sleep(RETRY_AFTER)
