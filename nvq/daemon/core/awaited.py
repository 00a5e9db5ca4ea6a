"""Questions to a runner answered by a frame that carries the question's `req`: `ask`
posts one and waits for its answer (None when the node is gone or the runner stays
silent), `answer` hands an arriving frame to whoever waits for it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from nvq.daemon.core.nodes import NodeRuntime
from nvq_runner.protocol import DaemonMsg

T = TypeVar("T")


class Awaited(Generic[T]):
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._waiters: dict[int, MemoryObjectSendStream[T]] = {}
        self._next_req = 1

    def answer(self, req: int, msg: T) -> None:
        send = self._waiters.pop(req, None)
        if send is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                send.send_nowait(msg)

    async def ask(self, node: NodeRuntime, question: Callable[[int], DaemonMsg]) -> T | None:
        """Post `question(req)` to `node` and wait up to `timeout` for its answer."""
        req = self._next_req
        self._next_req += 1
        send, receive = anyio.create_memory_object_stream[T](1)
        self._waiters[req] = send
        try:
            if not node.post(question(req)):
                return None
            with anyio.move_on_after(self.timeout):
                return await receive.receive()
            return None
        finally:
            self._waiters.pop(req, None)
            send.close()
            receive.close()
