"""The daemon's SSH side: one asyncssh connection per node (`connection`), the runner's
exec channel on it (`channel`), one-line errors that name the node (`errors`), the
runner installed on first contact (`bootstrap`, `probe`, `wheels`, and the two scripts
that run on the node, `node_probe.py` and `node_installer.py`), and the link opener
that ties them together (`opener`); and what any link reads and writes
(`byte_channel`), which the links above import without asyncssh.

The names below load on first use: importing `nvq.daemon.ssh.byte_channel` must not
bring asyncssh into a daemon that has no SSH node."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nvq.daemon.ssh.channel import RunnerChannel, open_runner_channel
    from nvq.daemon.ssh.connection import attach_command, connect_node, run_command, shell_path
    from nvq.daemon.ssh.errors import (
        BootstrapError,
        CommandTimeout,
        HostKeyError,
        LinkLost,
        NodeUnreachable,
        known_hosts_path,
        where,
    )

__all__ = [
    "BootstrapError",
    "CommandTimeout",
    "HostKeyError",
    "LinkLost",
    "NodeUnreachable",
    "RunnerChannel",
    "attach_command",
    "connect_node",
    "known_hosts_path",
    "open_runner_channel",
    "run_command",
    "shell_path",
    "where",
]

_WHERE = {
    "RunnerChannel": "channel", "open_runner_channel": "channel",
    "attach_command": "connection", "connect_node": "connection",
    "run_command": "connection", "shell_path": "connection",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_WHERE.get(name, 'errors')}")
    return getattr(module, name)
