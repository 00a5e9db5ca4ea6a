"""One daemon connection to the runner: frames out, with a bound on what may queue
unread, and the log-follow tasks answering that daemon."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from .outframes import encode_frames
from .protocol import LogData, RunnerMsg

log = logging.getLogger("nvq_runner")
MAX_BUFFERED = 256 * 1024 * 1024  # a daemon this far behind is not reading: drop it


class Conn:
    """One daemon connection and the follow tasks answering it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.tails: dict[int, asyncio.Task[None]] = {}
        self.closed = False

    def send(self, msg: RunnerMsg) -> None:
        if self.closed:
            return
        transport = self.writer.transport
        if transport.is_closing():
            self.close()
            return
        self.writer.write(encode_frames(msg))
        if transport.get_write_buffer_size() > MAX_BUFFERED:
            log.warning("daemon is not reading; dropping its connection")
            self.close()

    async def send_log(self, msg: LogData) -> None:
        self.send(msg)
        if not self.closed:
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for task in self.tails.values():
            task.cancel()
        self.writer.close()
