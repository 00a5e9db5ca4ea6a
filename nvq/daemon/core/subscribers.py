"""The live event stream's fan-out: every commit's events, handed to each subscriber
(`nvq queue events --follow`, the TUI, the web page) without touching the store.

A commit must never wait for a reader, so each subscriber has a bounded buffer; one
that falls that far behind is dropped (it resubscribes from the last id it saw)."""

from __future__ import annotations

from collections import OrderedDict, deque

import anyio

from nvq.model import Event, JobRecord

# Events a subscriber may have waiting before it counts as gone: a 10,000-job array
# submitted in one commit fits, a reader stuck for minutes does not.
DEFAULT_BUFFER = 50_000


class Subscriber:
    """One reader's queue of events not yet sent. `overflowed` is set (and nothing more
    is queued) once it holds more than `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending: deque[Event] = deque()
        self.overflowed = False
        self._ready = anyio.Event()

    def offer(self, events: list[Event]) -> None:
        if self.overflowed or not events:
            return
        if len(self.pending) + len(events) > self.limit:
            self.pending.clear()
            self.overflowed = True
        else:
            self.pending.extend(events)
        self._ready.set()

    async def take(self) -> list[Event]:
        """Everything queued so far (waits for at least one event, or the overflow)."""
        while not self.pending and not self.overflowed:
            await self._ready.wait()
            self._ready = anyio.Event()
        taken = list(self.pending)
        self.pending.clear()
        return taken


class Subscribers:
    def __init__(self, limit: int = DEFAULT_BUFFER) -> None:
        self.limit = limit
        self._all: set[Subscriber] = set()
        # What detailed followers' lines are made from, made once for all of them
        # (handlers/stream_lines.py): the records of ended jobs, by the id of the event
        # that ended each; and the lines, by event id and whether the reader may see
        # the job's output.
        self.ended: OrderedDict[int, JobRecord] = OrderedDict()
        self.ended_read = anyio.Lock()  # one store read for followers woken together
        self.lines: OrderedDict[tuple[int, bool], Event] = OrderedDict()

    def add(self) -> Subscriber:
        sub = Subscriber(self.limit)
        self._all.add(sub)
        return sub

    def remove(self, sub: Subscriber) -> None:
        self._all.discard(sub)

    def publish(self, events: list[Event]) -> None:
        """Called by `Held.commit` after each transaction: never blocks."""
        if not events:
            return
        for sub in list(self._all):
            sub.offer(events)
            if sub.overflowed:
                self._all.discard(sub)

    def __len__(self) -> int:
        return len(self._all)
