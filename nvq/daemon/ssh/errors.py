"""How the SSH transport fails: every failure is a `NodeUnreachable` (or subclass) whose
message is one line that names the node: ``node gpu1 (127.0.0.1:2222): connection refused``.
"""

from __future__ import annotations

import os
import socket

import asyncssh

from nvq.config import NodeConfig
from nvq.errors import Internal


class NodeUnreachable(Internal):
    """The node cannot be reached or the link to it broke: refused, timed out, DNS,
    authentication, host key, lost connection. The message is one line naming the node.
    `permanent`: retrying cannot help until a person acts (a host key to verify, a key
    or user to fix), so it is alerted at once rather than after `node_grace`."""

    permanent = False

    def __init__(self, node: NodeConfig, reason: str) -> None:
        self.node = node
        self.reason = reason
        super().__init__(f"{where(node)}: {reason}")


class HostKeyError(NodeUnreachable):
    """The node's host key is unknown or changed (or known_hosts is missing)."""

    permanent = True


class AccessRefused(NodeUnreachable):
    """sshd refused us: authentication failed (a wrong key, no such user) or our
    identity file cannot be loaded."""

    permanent = True


class LinkLost(NodeUnreachable):
    """An open connection or runner channel died (keepalive timeout, reset, sshd killed).
    An orderly end of the channel is not an error (the channel's `receive()` raises
    `anyio.EndOfStream`)."""


class CommandTimeout(NodeUnreachable):
    """`run_command` did not finish in time (the remote command was signalled and its
    channel closed)."""


class BootstrapError(NodeUnreachable):
    """Installing the runner failed; the message is one line naming the node and the step."""


def where(node: NodeConfig) -> str:
    """``node gpu1 (127.0.0.1:2222)`` — how every message names a node."""
    host = f"[{node.host}]" if ":" in node.host else node.host
    return f"node {node.name} ({host}:{node.port})"


def known_hosts_path(node: NodeConfig) -> str:
    """The known_hosts file checked for this node (`~` expanded)."""
    return os.path.expanduser(node.known_hosts or "~/.ssh/known_hosts")


def _host_pattern(node: NodeConfig) -> str:
    return node.host if node.port == 22 else f"[{node.host}]:{node.port}"


def host_key_error(node: NodeConfig, exc: BaseException | None) -> HostKeyError:
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


def one_line(text: str) -> str:
    return " ".join(str(text).split()) or "no reason given"


def tail(text: str, limit: int = 300) -> str:
    """The end of a command's output, on one line (where errors usually say what broke)."""
    one = " ".join(text.split())
    return one if len(one) <= limit else "…" + one[-limit:]


def map_error(
    node: NodeConfig, exc: BaseException, *, timeout: float | None = None
) -> NodeUnreachable:
    """Turn an asyncssh/OS error into a one-line NodeUnreachable naming the node."""
    if isinstance(exc, NodeUnreachable):
        return exc
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return host_key_error(node, exc)
    if isinstance(exc, asyncssh.PermissionDenied):
        who = node.user or "the default user"
        key = f"identity {node.identity}" if node.identity else "the default keys/agent"
        return AccessRefused(node, f"authentication failed for {who} with {key}")
    if isinstance(exc, asyncssh.ConnectionLost):
        return LinkLost(node, f"connection lost: {one_line(exc.reason)}")
    if isinstance(exc, asyncssh.DisconnectError):
        return LinkLost(node, f"disconnected: {one_line(exc.reason)}")
    if isinstance(exc, asyncssh.KeyImportError):
        return AccessRefused(node, f"cannot load identity {node.identity}: {one_line(str(exc))}")
    if isinstance(exc, asyncssh.ChannelOpenError):
        return LinkLost(node, f"cannot open a channel: {one_line(exc.reason)}")
    if isinstance(exc, TimeoutError):
        after = f" after {timeout:g}s" if timeout else ""
        return NodeUnreachable(node, f"connection timed out{after}")
    if isinstance(exc, ConnectionRefusedError):
        return NodeUnreachable(node, "connection refused")
    if isinstance(exc, socket.gaierror):
        return NodeUnreachable(node, f"cannot resolve {node.host}: {one_line(exc.strerror or '')}")
    if isinstance(exc, BrokenPipeError | ConnectionResetError | ConnectionAbortedError):
        return LinkLost(node, f"connection lost: {one_line(exc.strerror or str(exc))}")
    if isinstance(exc, OSError):
        return NodeUnreachable(node, one_line(exc.strerror or str(exc) or type(exc).__name__))
    if isinstance(exc, asyncssh.Error):
        return NodeUnreachable(node, one_line(exc.reason))
    return NodeUnreachable(node, f"{type(exc).__name__}: {one_line(str(exc))}")
