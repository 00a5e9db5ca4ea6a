"""The daemon's SSH transport to one node (asyncssh underneath; use under anyio's asyncio
backend).

* `connect_node(node)` opens the one long-lived connection to a node. Host keys are
  always verified against `node.known_hosts` (or `~/.ssh/known_hosts`); an unknown or
  changed key raises `HostKeyError`, never a silent accept. asyncssh keepalives
  (`keepalive_interval` × `keepalive_count_max`) detect a dead or hung peer: the
  connection is then closed and every channel on it ends with `LinkLost`.
* `open_runner_channel(conn, node)` runs `attach_command(node)` (`python -m nvq_runner
  attach --home H`) on a binary exec channel and returns a `RunnerChannel`: `read(n)`,
  `write(data)`, `drain()`, `close()`, `wait_closed()`. It unpacks as
  `reader, writer = await open_runner_channel(...)` (both names are the same object),
  and it satisfies the `AsyncByteReader` / `AsyncByteWriter` protocols below, as do
  asyncio's `StreamReader` / `StreamWriter` for the local node's Unix socket.
* `open_node_channel(node)` does both and returns a channel that owns its connection:
  an `anyio.abc.ByteStream`, so it is directly a link's `ByteChannel`.
* `run_command(conn, command, timeout=...)` runs one command (bootstrap, diagnostics).

Every failure is a `NodeUnreachable` (or subclass) whose message is one line that names
the node: ``node gpu1 (127.0.0.1:2222): connection refused``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import socket
from collections.abc import Iterator
from typing import Protocol

import anyio
import anyio.abc
import asyncssh

from nvq.config import NodeConfig

__all__ = [
    "AsyncByteReader",
    "AsyncByteWriter",
    "CommandTimeout",
    "HostKeyError",
    "LinkLost",
    "NodeUnreachable",
    "RunnerChannel",
    "attach_command",
    "connect_node",
    "known_hosts_path",
    "open_node_channel",
    "open_runner_channel",
    "run_command",
]

STDERR_TAIL_BYTES = 8192


# ------------------------------------------------------------------ errors


class NodeUnreachable(Exception):
    """The node cannot be reached or the link to it broke: refused, timed out, DNS,
    authentication, host key, lost connection. The message is one line naming the node."""

    def __init__(self, node: NodeConfig, reason: str) -> None:
        self.node = node
        self.reason = reason
        super().__init__(f"{where(node)}: {reason}")


class HostKeyError(NodeUnreachable):
    """The node's host key is unknown or changed (or known_hosts is missing)."""


class LinkLost(NodeUnreachable):
    """An open connection or runner channel died (keepalive timeout, reset, sshd killed).
    An orderly end of the channel is not an error: `read()` then returns b""."""


class CommandTimeout(NodeUnreachable):
    """`run_command` did not finish in time (the remote command was signalled and its
    channel closed)."""


def where(node: NodeConfig) -> str:
    """``node gpu1 (127.0.0.1:2222)`` — how every message names a node."""
    host = f"[{node.host}]" if ":" in node.host else node.host
    return f"node {node.name} ({host}:{node.port})"


def known_hosts_path(node: NodeConfig) -> str:
    """The known_hosts file checked for this node (`~` expanded)."""
    return os.path.expanduser(node.known_hosts or "~/.ssh/known_hosts")


def _host_pattern(node: NodeConfig) -> str:
    return node.host if node.port == 22 else f"[{node.host}]:{node.port}"


def _host_key_error(node: NodeConfig, exc: BaseException | None) -> HostKeyError:
    path = known_hosts_path(node)
    try:
        trusted = asyncssh.match_known_hosts(path, node.host, node.host, node.port)[0]
    except Exception:
        trusted = []
    if trusted:
        reason = (
            f"host key changed: the key offered does not match {_host_pattern(node)} in "
            f"{path}; if the change is expected, replace that line"
        )
    else:
        reason = (
            f"host key unknown: {_host_pattern(node)} is not in {path}; verify the key "
            f"and add it (ssh-keyscan -p {node.port} {node.host} >> {path})"
        )
    return HostKeyError(node, reason)


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "no reason given"


def map_error(
    node: NodeConfig, exc: BaseException, *, timeout: float | None = None
) -> NodeUnreachable:
    """Turn an asyncssh/OS error into a one-line NodeUnreachable naming the node."""
    if isinstance(exc, NodeUnreachable):
        return exc
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return _host_key_error(node, exc)
    if isinstance(exc, asyncssh.PermissionDenied):
        who = node.user or "the default user"
        key = f"identity {node.identity}" if node.identity else "the default keys/agent"
        return NodeUnreachable(node, f"authentication failed for {who} with {key}")
    if isinstance(exc, asyncssh.ConnectionLost):
        return LinkLost(node, f"connection lost: {_one_line(exc.reason)}")
    if isinstance(exc, asyncssh.DisconnectError):
        return LinkLost(node, f"disconnected: {_one_line(exc.reason)}")
    if isinstance(exc, asyncssh.KeyImportError):
        return NodeUnreachable(node, f"cannot load identity {node.identity}: {_one_line(str(exc))}")
    if isinstance(exc, asyncssh.ChannelOpenError):
        return LinkLost(node, f"cannot open a channel: {_one_line(exc.reason)}")
    if isinstance(exc, TimeoutError):
        after = f" after {timeout:g}s" if timeout else ""
        return NodeUnreachable(node, f"connection timed out{after}")
    if isinstance(exc, ConnectionRefusedError):
        return NodeUnreachable(node, "connection refused")
    if isinstance(exc, socket.gaierror):
        return NodeUnreachable(node, f"cannot resolve {node.host}: {_one_line(exc.strerror or '')}")
    if isinstance(exc, BrokenPipeError | ConnectionResetError | ConnectionAbortedError):
        return LinkLost(node, f"connection lost: {_one_line(exc.strerror or str(exc))}")
    if isinstance(exc, OSError):
        return NodeUnreachable(node, _one_line(exc.strerror or str(exc) or type(exc).__name__))
    if isinstance(exc, asyncssh.Error):
        return NodeUnreachable(node, _one_line(exc.reason))
    return NodeUnreachable(node, f"{type(exc).__name__}: {_one_line(str(exc))}")


# ------------------------------------------------------------------ connecting


class _NodeClient(asyncssh.SSHClient):
    """Remembers why the connection ended, so channels can tell a lost link from EOF."""

    def __init__(self) -> None:
        self.lost: Exception | None = None
        self.closed = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc


def _client_of(conn: asyncssh.SSHClientConnection) -> _NodeClient | None:
    owner = conn.get_owner()
    return owner if isinstance(owner, _NodeClient) else None


async def connect_node(
    node: NodeConfig,
    *,
    connect_timeout: float = 10,
    keepalive_interval: float = 5,
    keepalive_count_max: int = 3,
) -> asyncssh.SSHClientConnection:
    """Open the node's SSH connection: host key verified, keepalives on.

    `connect_timeout` bounds the TCP connect, key exchange and authentication together
    (a hung sshd that accepts TCP but never speaks is caught by it). The caller owns the
    connection: `conn.close(); await conn.wait_closed()`.
    """
    known_hosts = known_hosts_path(node)
    if not os.path.isfile(known_hosts):
        raise HostKeyError(
            node,
            f"known_hosts file {known_hosts} does not exist, so the host key cannot be verified",
        )
    options: dict[str, object] = {
        "port": node.port,
        "known_hosts": known_hosts,
        "connect_timeout": connect_timeout,
        "keepalive_interval": keepalive_interval,
        "keepalive_count_max": keepalive_count_max,
    }
    if node.user:
        options["username"] = node.user
    if node.identity:
        identity = os.path.expanduser(node.identity)
        if not os.path.isfile(identity):
            raise NodeUnreachable(node, f"identity file {identity} does not exist")
        options["client_keys"] = [identity]
    try:
        return await asyncssh.connect(node.host, client_factory=_NodeClient, **options)
    except asyncssh.HostKeyNotVerifiable as exc:
        raise _host_key_error(node, exc) from exc
    except (OSError, asyncssh.Error, TimeoutError) as exc:
        raise map_error(node, exc, timeout=connect_timeout) from exc


# ------------------------------------------------------------------ commands

_TILDE_PREFIX = re.compile(r"~[A-Za-z0-9._-]*")


def shell_path(path: str) -> str:
    """Shell-quote a path but leave a leading `~` / `~user` unquoted, so the node's
    shell expands it: ``~/.nvq`` → ``~/.nvq``, ``~/my dir`` → ``~/'my dir'``."""
    head, sep, rest = path.partition("/")
    if _TILDE_PREFIX.fullmatch(head):
        return head + sep + (shlex.quote(rest) if rest else "")
    return shlex.quote(path)


_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def attach_command(node: NodeConfig) -> str:
    """``env K=V ... <python> -m nvq_runner attach --home <home>``, quoted for the node's
    shell; a leading `~` in `python` and `home` expands on the node."""
    parts: list[str] = []
    if node.env:
        parts.append("env")
        for key, value in node.env.items():
            if not _ENV_KEY.fullmatch(key):
                raise ValueError(f"{where(node)}: env key {key!r} is not a valid variable name")
            parts.append(shlex.quote(f"{key}={value}"))
    parts += [
        shell_path(node.python),
        "-m",
        "nvq_runner",
        "attach",
        "--home",
        shell_path(node.home),
    ]
    return " ".join(parts)


async def run_command(
    conn: asyncssh.SSHClientConnection,
    command: str,
    *,
    timeout: float,
    node: NodeConfig | None = None,
) -> tuple[int, str, str]:
    """Run one command, return (exit code, stdout, stderr) as text (undecodable bytes
    replaced). The exit code is -N when the command died of signal N, -1 when the
    server sent no status. Raises `CommandTimeout` after `timeout` seconds (the command
    is sent SIGKILL, best effort — OpenSSH ignores it for root — and its channel is
    abandoned) and `NodeUnreachable` when the
    connection fails; `node` only names the node in those messages."""
    who = node or _anonymous(conn)
    try:
        proc = await conn.create_process(command, encoding="utf-8", errors="replace")
        try:
            result = await proc.wait(timeout=timeout)
        except asyncssh.TimeoutError:
            # Ask the server to kill it, then close our end without waiting: sshd keeps
            # a channel open until its command exits, and a caller that timed out must
            # not wait for that. OpenSSH refuses "signal" requests for root sessions
            # (no privilege separation there), so the command may run on to its end.
            with contextlib.suppress(Exception):
                proc.kill()
            proc.close()
            raise CommandTimeout(
                who, f"command timed out after {timeout:g}s: {_one_line(command)[:200]}"
            ) from None
        finally:
            proc.close()
    except (OSError, asyncssh.Error) as exc:
        raise map_error(who, exc) from exc
    code = result.returncode
    out, err = result.stdout, result.stderr
    return (
        -1 if code is None else code,
        out if isinstance(out, str) else "",
        err if isinstance(err, str) else "",
    )


def _anonymous(conn: asyncssh.SSHClientConnection) -> NodeConfig:
    peer = conn.get_extra_info("peername") or ("?", 0)
    return NodeConfig(name="?", host=str(peer[0]), port=int(peer[1]))


# ------------------------------------------------------------------ the runner channel


class AsyncByteReader(Protocol):
    async def read(self, n: int) -> bytes: ...


class AsyncByteWriter(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class RunnerChannel(anyio.abc.ByteStream):
    """A binary exec channel to `nvq_runner attach` (or any command).

    Two faces over the same channel:

    anyio `ByteStream` (what `nvq.daemon.link.ByteChannel` wants):
    * `receive(max_bytes)` raises `anyio.EndOfStream` at an orderly end and
      `anyio.BrokenResourceError` (its `__cause__` is the `LinkLost`) when the link died.
    * `send(data)` writes and waits for flow control; `BrokenResourceError` when dead.
    * `send_eof()` half-closes; `aclose()` closes the channel — and the SSH connection
      too when the channel owns it (`open_node_channel`).

    asyncio-stream style (`AsyncByteReader` / `AsyncByteWriter`):

    * `read(n)` returns up to n bytes, b"" at an orderly end of the channel, and raises
      `LinkLost` when the connection died (keepalive timeout, reset).
    * `write(data)` queues bytes; `await drain()` waits for flow control. Both raise
      `LinkLost` on a dead channel.
    * `write_eof()` half-closes (the command sees end of input).
    * `close()` sends EOF and closes the channel; `await wait_closed()` waits for it.
    * `stderr_tail` holds the last few KiB the command wrote to stderr (read in the
      background so it can never stall the channel) — e.g. "No module named nvq_runner".
    * `exit_status` is the command's exit status once it ended (None before / unknown).
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

    def __iter__(self) -> Iterator[RunnerChannel]:
        """`reader, writer = channel` (both are this object)."""
        return iter((self, self))

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

    def _lost(self, exc: BaseException | None = None) -> LinkLost:
        client = _client_of(self._conn)
        cause = exc or (client.lost if client else None)
        if cause is not None:
            err = map_error(self.node, cause)
            if isinstance(err, LinkLost):
                return err
            return LinkLost(self.node, err.reason)
        return LinkLost(self.node, "connection closed")

    async def read(self, n: int = 65536) -> bytes:
        try:
            data = await self._process.stdout.read(n)
        except (OSError, asyncssh.Error) as exc:
            raise self._lost(exc) from exc
        if not data:
            client = _client_of(self._conn)
            if client is not None and client.lost is not None:
                raise self._lost()
        return data

    def write(self, data: bytes) -> None:
        try:
            self._process.stdin.write(data)
        except (OSError, asyncssh.Error) as exc:
            raise self._lost(exc) from exc

    async def drain(self) -> None:
        try:
            await self._process.stdin.drain()
        except (OSError, asyncssh.Error) as exc:
            raise self._lost(exc) from exc
        client = _client_of(self._conn)
        if client is not None and client.closed:
            raise self._lost()

    def write_eof(self) -> None:
        """Half-close: the command sees end of input; reading goes on."""
        try:
            self._process.stdin.write_eof()
        except (OSError, asyncssh.Error) as exc:
            raise self._lost(exc) from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._process.stdin.write_eof()
        self._process.close()

    async def wait_closed(self) -> None:
        with contextlib.suppress(Exception):
            await self._process.wait_closed()
        with contextlib.suppress(Exception):
            await self._stderr_task

    # ---------------------------------------------------------- anyio ByteStream

    @property
    def connection(self) -> asyncssh.SSHClientConnection:
        return self._conn

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = await self.read(max_bytes)
        except LinkLost as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        try:
            self.write(item)
            await self.drain()
        except LinkLost as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc

    async def send_eof(self) -> None:
        try:
            self.write_eof()
        except LinkLost as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc

    async def aclose(self) -> None:
        """Close the channel (and the connection when this channel owns it). Does not
        wait for a dead or hung peer: sshd may hold a channel open until its command
        exits, so only a bounded wait is spent on an orderly close."""
        self.close()
        with anyio.move_on_after(2, shield=True):
            await self.wait_closed()
        if self.owns_connection:
            self._conn.close()
            with anyio.move_on_after(2, shield=True):
                await self._conn.wait_closed()


async def open_runner_channel(
    conn: asyncssh.SSHClientConnection, node: NodeConfig, *, command: str | None = None
) -> RunnerChannel:
    """Run `attach_command(node)` (or `command`, for tests and diagnostics) on a binary
    exec channel."""
    cmd = command if command is not None else attach_command(node)
    try:
        process = await conn.create_process(cmd, encoding=None)
    except (OSError, asyncssh.Error) as exc:
        raise map_error(node, exc) from exc
    return RunnerChannel(node, conn, process, cmd)


async def open_node_channel(
    node: NodeConfig,
    *,
    command: str | None = None,
    connect_timeout: float = 10,
    keepalive_interval: float = 5,
    keepalive_count_max: int = 3,
) -> RunnerChannel:
    """`connect_node` + `open_runner_channel` in one: the channel owns its connection
    (`aclose()` closes both). This is a link's opener for an SSH node."""
    conn = await connect_node(
        node,
        connect_timeout=connect_timeout,
        keepalive_interval=keepalive_interval,
        keepalive_count_max=keepalive_count_max,
    )
    try:
        chan = await open_runner_channel(conn, node, command=command)
    except BaseException:
        conn.close()
        raise
    chan.owns_connection = True
    return chan
