"""One subscription to the daemon's event stream per `nvq web` process, fanned out to
every open page: each page's server-sent-event stream wakes on the next event."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio

from nvq.client.errors import ClientError
from nvq.model import Event

log = logging.getLogger("nvq.web")

# Until the daemon streams events, the page reads the log this often.
FALLBACK_POLL = 0.5
RETRY_AFTER = 1.0
PAGE = 5000


class Hub:
    """The last event seen, and a signal that fires when another arrives."""

    def __init__(self) -> None:
        self.last_id = 0
        self.last: Event | None = None
        self._changed = anyio.Event()

    def publish(self, event: Event) -> None:
        self.last_id = max(self.last_id, event.id)
        self.last = event
        self._changed.set()
        self._changed = anyio.Event()

    async def next_after(self, seen: int) -> int:
        """Wait until an event newer than `seen` has arrived; its id."""
        while self.last_id <= seen:
            await self._changed.wait()
        return self.last_id

    async def follow(self, client: Any) -> None:
        """Feed the hub from `client` for ever, starting after the newest event now
        in the log; a lost daemon is retried."""
        try:
            self.last_id = await _end_of_log(client)
        except ClientError as exc:
            log.warning("cannot read the event log yet: %s", exc)
        while True:
            try:
                async for event in _events(client, self.last_id):
                    self.publish(event)
            except ClientError as exc:
                log.warning("event stream interrupted: %s", exc)
            await anyio.sleep(RETRY_AFTER)


async def _end_of_log(client: Any) -> int:
    last = 0
    while True:
        page = await client.events(since=last, limit=PAGE)
        if page:
            last = page[-1].id
        if len(page) < PAGE:
            return last


async def _events(client: Any, since: int) -> AsyncIterator[Event]:
    subscribe = getattr(client, "subscribe", None)
    if subscribe is not None:
        async for event in subscribe(since):
            yield event
        return
    while True:
        for event in await client.events(since=since, limit=PAGE):
            since = event.id
            yield event
        await anyio.sleep(FALLBACK_POLL)
