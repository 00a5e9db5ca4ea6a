"""The daemon's SSH side: one asyncssh connection per node (`connection`), the runner's
exec channel on it (`channel`), one-line errors that name the node (`errors`), the
runner installed on first contact (`bootstrap`, `probe`, `wheels`, and the two scripts
that run on the node, `node_probe.py` and `node_installer.py`), and the link opener
that ties them together (`opener`)."""

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
