"""An SSH node's forwarded connections (direct-tcpip, direct-streamlocal) as anyio byte
streams: what interactive sessions and port forwards use beside the runner link."""

from __future__ import annotations

import contextlib

import anyio
import anyio.abc
import asyncssh

from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.nodes import NodeRuntime

STREAMLOCAL_RETRY = 0.01


class SshStream(anyio.abc.ByteStream):
    """A forwarded connection (direct-tcpip or direct-streamlocal) as a byte stream."""

    def __init__(self, reader: asyncssh.SSHReader[bytes], writer: asyncssh.SSHWriter[bytes]) -> None:
        self._reader, self._writer = reader, writer

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await self._reader.read(max_bytes)
        except (OSError, asyncssh.Error) as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (OSError, asyncssh.Error) as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc

    async def send_eof(self) -> None:
        with contextlib.suppress(OSError, asyncssh.Error):
            self._writer.write_eof()

    async def aclose(self) -> None:
        self._writer.close()


async def streamlocal(node: NodeRuntime, path: str, wait: float) -> SshStream | None:
    """A direct-streamlocal channel to `path`, waiting for the socket to appear (it
    does a moment after the job's start); None when sshd does not forward to Unix
    sockets here (the caller then goes through an exec channel)."""
    conn = getattr(node.channel, "connection", None)
    if conn is None:
        raise RequestError(f"node {node.name} is not connected over SSH right now")
    with anyio.move_on_after(wait):
        while True:
            try:
                reader, writer = await conn.open_unix_connection(path)
                return SshStream(reader, writer)
            except asyncssh.ChannelOpenError as exc:
                if exc.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED:
                    return None
            await anyio.sleep(STREAMLOCAL_RETRY)
    raise RequestError(f"the session's terminal on {node.name} never appeared ({path})")
