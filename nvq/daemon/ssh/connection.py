"""The daemon's SSH connection to one node (asyncssh underneath; use under anyio's
asyncio backend).

* `connect_node(node)` opens the one long-lived connection to a node. Host keys are
  always verified against `node.known_hosts` (or `~/.ssh/known_hosts`); an unknown or
  changed key raises `HostKeyError`, never a silent accept. asyncssh keepalives
  (`keepalive_interval` × `keepalive_count_max`) detect a dead or hung peer: the
  connection is then closed and every channel on it ends with `LinkLost`.
* `run_command(conn, command, timeout=...)` runs one command (bootstrap, diagnostics).
* `attach_command(node)` is the command line that starts the node's runner link.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex

import anyio
import asyncssh
import msgspec

from nvq.config import NodeConfig
from nvq.daemon.ssh.errors import (
    CommandTimeout,
    HostKeyError,
    NodeUnreachable,
    host_key_error,
    known_hosts_path,
    map_error,
    one_line,
    where,
)

# ------------------------------------------------------------------ connecting


class _NodeClient(asyncssh.SSHClient):
    """Remembers why the connection ended, so channels can tell a lost link from EOF."""

    def __init__(self) -> None:
        self.lost: Exception | None = None
        self.closed = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc


# AES-GCM first: every packet of every node link is sealed in Python here, and
# asyncssh's chacha20-poly1305 builds cipher objects per packet (14.7 µs a small
# packet against 2.4 µs for AES-GCM, which is one call into OpenSSL with AES-NI).
# Both are OpenSSH's own defaults; the order only says which this client asks first.
ENCRYPTION_ALGS = [
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes256-ctr",
    "aes192-ctr",
    "aes128-ctr",
]


def client_of(conn: asyncssh.SSHClientConnection) -> _NodeClient | None:
    owner = conn.get_owner()
    return owner if isinstance(owner, _NodeClient) else None


async def connect_node(
    node: NodeConfig,
    *,
    connect_timeout: float = 10,
    keepalive_interval: float = 5,
    keepalive_count_max: int = 3,
) -> asyncssh.SSHClientConnection:
    """Open the node's SSH connection: host key verified, keepalives on; through its
    jump hosts (`node.hops`, each verified the same way) when it has them.

    `connect_timeout` bounds the TCP connect, key exchange and authentication together
    (a hung sshd that accepts TCP but never speaks is caught by it). The caller owns the
    connection: `conn.close(); await conn.wait_closed()` (which closes its hops too).
    """
    tunnel: asyncssh.SSHClientConnection | None = None
    try:
        for hop in node.hops:
            via = msgspec.structs.replace(
                node, name=f"{node.name} via jump", host=hop.host, port=hop.port,
                user=hop.user, identity=hop.identity, known_hosts=hop.known_hosts, hops=[])
            conn = await _connect_one(via, tunnel, connect_timeout, keepalive_interval,
                                      keepalive_count_max)
            conn.set_tunnel(tunnel)  # closed with the connection that runs over it
            tunnel = conn
        conn = await _connect_one(node, tunnel, connect_timeout, keepalive_interval,
                                  keepalive_count_max)
    except BaseException:
        if tunnel is not None:
            tunnel.close()
        raise
    conn.set_tunnel(tunnel)
    return conn


async def _connect_one(
    node: NodeConfig, tunnel: asyncssh.SSHClientConnection | None, connect_timeout: float,
    keepalive_interval: float, keepalive_count_max: int,
) -> asyncssh.SSHClientConnection:
    known_hosts = known_hosts_path(node)
    if not await anyio.Path(known_hosts).is_file():
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
        "encryption_algs": ENCRYPTION_ALGS,
    }
    if tunnel is not None:
        options["tunnel"] = tunnel
    if node.user:
        options["username"] = node.user
    if node.identity:
        identity = os.path.expanduser(node.identity)  # noqa: ASYNC240 - no I/O, string work
        if not await anyio.Path(identity).is_file():
            raise NodeUnreachable(node, f"identity file {identity} does not exist")
        options["client_keys"] = [identity]
    try:
        return await asyncssh.connect(node.host, client_factory=_NodeClient, **options)
    except asyncssh.HostKeyNotVerifiable as exc:
        raise host_key_error(node, exc) from exc
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
    input: str | None = None,
) -> tuple[int, str, str]:
    """Run one command, return (exit code, stdout, stderr) as text (undecodable bytes
    replaced). The exit code is -N when the command died of signal N, -1 when the
    server sent no status. Raises `CommandTimeout` after `timeout` seconds (the command
    is sent SIGKILL, best effort — OpenSSH ignores it for root — and its channel is
    abandoned) and `NodeUnreachable` when the
    connection fails; `node` only names the node in those messages. `input` is
    written to its stdin."""
    who = node or _anonymous(conn)
    try:
        proc = await conn.create_process(command, encoding="utf-8", errors="replace")
        try:
            if input is not None:  # on stdin: no size limit, unlike the command line
                proc.stdin.write(input)
                proc.stdin.write_eof()
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
                who, f"command timed out after {timeout:g}s: {one_line(command)[:200]}"
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
