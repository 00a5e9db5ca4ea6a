"""A binary exec channel to a node's runner (`nvq_runner attach`), as an anyio
`ByteStream`: what a link's `ByteChannel` wants."""

from __future__ import annotations

import asyncio
import contextlib

import anyio
import anyio.abc
import asyncssh

from nvq.config import NodeConfig
from nvq.daemon.ssh.connection import attach_command, client_of
from nvq.daemon.ssh.errors import LinkLost, map_error

STDERR_TAIL_BYTES = 8192


class RunnerChannel(anyio.abc.ByteStream):
    """A binary exec channel to `nvq_runner attach` (or any command).

    * `receive(max_bytes)` raises `anyio.EndOfStream` at an orderly end and
      `anyio.BrokenResourceError` (its `__cause__` is the `LinkLost`) when the link died
      (keepalive timeout, reset, sshd killed).
    * `send(data)` writes and waits for flow control; `BrokenResourceError` when dead.
    * `send_eof()` half-closes (the command sees end of input; reading goes on).
    * `aclose()` closes the channel, and the SSH connection too when the channel owns it.
    * `stderr_tail` holds the last few KiB the command wrote to stderr (read in the
      background so it can never stall the channel), e.g. "No module named nvq_runner".
    * `exit_status` is the command's exit status once it ended (None before / unknown).
    * `connection` is the SSH connection under it (artifact syncs open SFTP on it).
    """

    def __init__(
        self,
        node: NodeConfig,
        conn: asyncssh.SSHClientConnection,
        process: asyncssh.SSHClientProcess[bytes],
        command: str,
        *,
        owns_connection: bool = False,
    ) -> None:
        self.node = node
        self.command = command
        self.owns_connection = owns_connection
        self._conn = conn
        self._process = process
        self._stderr = bytearray()
        self._stderr_task = asyncio.get_running_loop().create_task(self._collect_stderr())

    async def _collect_stderr(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                chunk = await self._process.stderr.read(4096)
                if not chunk:
                    return
                self._stderr += chunk
                del self._stderr[:-STDERR_TAIL_BYTES]

    @property
    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    @property
    def exit_status(self) -> int | None:
        return self._process.exit_status

    async def ended(self) -> int | None:
        """Wait until the command has ended and its stderr is read; its exit status."""
        await self._process.wait_closed()
        with contextlib.suppress(Exception):
            await self._stderr_task
        return self._process.exit_status

    @property
    def connection(self) -> asyncssh.SSHClientConnection:
        return self._conn

    def _lost(self, exc: BaseException | None = None) -> LinkLost:
        """Why the channel is dead, in one line (raised as the cause of anyio's error)."""
        client = client_of(self._conn)
        cause = exc or (client.lost if client else None)
        if cause is None:
            return LinkLost(self.node, "connection closed")
        err = map_error(self.node, cause)
        return err if isinstance(err, LinkLost) else LinkLost(self.node, err.reason)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await self._process.stdout.read(max_bytes)
        except (OSError, asyncssh.Error) as exc:
            lost = self._lost(exc)
            raise anyio.BrokenResourceError(str(lost)) from lost
        if not data:
            # The stream ends the same way whether the command exited or the
            # connection died; only the connection's own record tells them apart.
            client = client_of(self._conn)
            if client is not None and client.lost is not None:
                lost = self._lost()
                raise anyio.BrokenResourceError(str(lost)) from lost
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        try:
            self._process.stdin.write(item)
            await self._process.stdin.drain()
        except (OSError, asyncssh.Error) as exc:
            lost = self._lost(exc)
            raise anyio.BrokenResourceError(str(lost)) from lost
        client = client_of(self._conn)
        if client is not None and client.closed:
            lost = self._lost()
            raise anyio.BrokenResourceError(str(lost)) from lost

    async def send_eof(self) -> None:
        try:
            self._process.stdin.write_eof()
        except (OSError, asyncssh.Error) as exc:
            lost = self._lost(exc)
            raise anyio.BrokenResourceError(str(lost)) from lost

    async def aclose(self) -> None:
        """Close the channel (and the connection when this channel owns it). Does not
        wait for a dead or hung peer: sshd may hold a channel open until its command
        exits, so only a bounded wait is spent on an orderly close."""
        with contextlib.suppress(Exception):
            self._process.stdin.write_eof()
        self._process.close()
        with anyio.move_on_after(2, shield=True):
            with contextlib.suppress(Exception):
                await self._process.wait_closed()
            with contextlib.suppress(Exception):
                await self._stderr_task
        if self.owns_connection:
            self._conn.close()
            with anyio.move_on_after(2, shield=True):
                await self._conn.wait_closed()


async def open_runner_channel(
    conn: asyncssh.SSHClientConnection,
    node: NodeConfig,
    *,
    command: str | None = None,
    owns_connection: bool = False,
) -> RunnerChannel:
    """Run `attach_command(node)` (or `command`, for tests and diagnostics) on a binary
    exec channel. With `owns_connection`, closing the channel closes `conn` too."""
    cmd = command if command is not None else attach_command(node)
    try:
        process = await conn.create_process(cmd, encoding=None)
    except (OSError, asyncssh.Error) as exc:
        raise map_error(node, exc) from exc
    return RunnerChannel(node, conn, process, cmd, owns_connection=owns_connection)
