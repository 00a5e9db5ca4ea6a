"""What a node's link reads and writes, whatever carries it (a Unix socket to the local
runner, an SSH exec channel, a Slurm pilot's channel), and the call that opens one.
Declared here, in the transport's room, so that the transports implement what sits
beside them and the links above (`nvq.daemon.machines.link`) use it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol


class ByteChannel(Protocol):
    async def receive(self) -> bytes:
        """Next bytes; raises anyio.EndOfStream (or returns b"") when the peer closed."""
        ...

    async def send(self, data: bytes) -> None: ...

    async def aclose(self) -> None: ...


Opener = Callable[[], Awaitable[ByteChannel]]
