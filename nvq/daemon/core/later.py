"""Writes a request may leave behind: while the disk holding queue.db is full a
write waits for room (`Store.write`), and a person who cancels a job should hear at
once that the cancel is recorded rather than wait with it. The write goes on here,
in a task of the daemon's own, and lands when the disk has room."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from nvq.daemon.core.errors import RequestError
from nvq.store import Store

log = logging.getLogger("nvq.daemon")

T = TypeVar("T")
Work = Callable[[], Coroutine[Any, Any, None]]


class Later:
    """Work that outlives the request that asked for it. `run` carries it out (the
    daemon starts it with its other services)."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[Work](math.inf)

    def start(self, work: Work) -> None:
        self._send.send_nowait(work)

    async def run(self) -> None:
        async with anyio.create_task_group() as tg, self._receive:
            async for work in self._receive:
                tg.start_soon(work)


async def unless_disk_full(
    later: Later, store: Store, write: Callable[[], Awaitable[T]], what: str
) -> T | None:
    """`write()`'s result; or None as soon as the disk is full first, `write` going
    on in `later` until it lands. A refusal it meets then is logged with `what`."""
    results: list[T] = []
    failures: list[Exception] = []
    done = anyio.Event()
    answered = False

    async def attempt() -> None:
        try:
            results.append(await write())
        except Exception as exc:
            if answered:
                # The caller has gone with "recorded": the log is where this goes.
                if isinstance(exc, RequestError):
                    log.warning("%s, recorded while the disk was full: %s", what, exc)
                else:
                    log.exception("%s, recorded while the disk was full, failed", what)
            failures.append(exc)
        finally:
            done.set()

    later.start(attempt)
    async with anyio.create_task_group() as tg:

        async def until(event: Callable[[], Awaitable[None]]) -> None:
            await event()
            tg.cancel_scope.cancel()

        tg.start_soon(until, done.wait)
        tg.start_soon(until, store.until_full)
    if done.is_set():
        if failures:
            raise failures[0]
        return results[0]
    answered = True
    return None
