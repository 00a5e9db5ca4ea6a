"""Opening an SSH node's runner channel, with the runner installed on first contact.

A node whose `python` is left at its default runs the runner from a venv under its
home that nvq installs and keeps at this exact version (`bootstrap`). On the first
connection of a daemon's life the venv is checked (one probe; a no-op when it is
current) and, when something was installed, a runner still running old code is
stopped so that `attach` starts the new one. Its jobs keep running: they are not
the runner's process group, and the new runner adopts them.

A node whose `python` is set is asked once whether that interpreter imports
`nvq_runner` itself: if so the user manages it and it is used as is; if not (a plain
`/usr/bin/python3`, or the newer Python an old node was told to name) it is the base
of the venv nvq installs, exactly as `python3` is by default. Which interpreter the
runner runs under is then remembered for the node (`runner_node`), so every channel
(attach, exec, pack, stop) uses the same one.
"""

from __future__ import annotations

import logging
import shlex

import asyncssh
import msgspec

from nvq.config import NodeConfig, QueueConfig
from nvq.daemon.ssh.bootstrap import BootstrapResult, bootstrap_node, runner_python
from nvq.daemon.ssh.byte_channel import ByteChannel, Opener
from nvq.daemon.ssh.channel import open_runner_channel
from nvq.daemon.ssh.connection import connect_node, run_command, shell_path

log = logging.getLogger("nvq.ssh")


# (node name, configured python, home) → the interpreter its runner runs under, once
# the first connection found out (a configured python without nvq_runner: the venv).
_runs_under: dict[tuple[str, str, str], str] = {}


def _key(node: NodeConfig) -> tuple[str, str, str]:
    return (node.name, node.python, node.home)


def managed(node: NodeConfig) -> bool:
    """Does nvq install the runner on this node (rather than use the user's python)?"""
    chosen = _runs_under.get(_key(node))
    return runner_python(node) != node.python or (chosen is not None and chosen != node.python)


def runner_node(node: NodeConfig) -> NodeConfig:
    """The node as `attach` should see it: with the interpreter that has nvq_runner."""
    python = _runs_under.get(_key(node)) or runner_python(node)
    return msgspec.structs.replace(node, python=python)


async def imports_runner(conn: asyncssh.SSHClientConnection, node: NodeConfig) -> bool:
    """Whether the configured interpreter imports nvq_runner itself (one the user
    manages), rather than being a plain Python for nvq's venv to be built from."""
    probe = f"{shell_path(node.python)} -c 'import nvq_runner'"
    code, _, _ = await run_command(conn, probe, timeout=30, node=node)
    return code == 0


async def connect(node: NodeConfig, queue: QueueConfig) -> asyncssh.SSHClientConnection:
    return await connect_node(
        node,
        connect_timeout=queue.ssh_connect_timeout,
        keepalive_interval=queue.ssh_keepalive,
    )


async def install_runner(
    conn: asyncssh.SSHClientConnection, node: NodeConfig, *, force: bool = False
) -> BootstrapResult:
    result = await bootstrap_node(conn, node, force=force)
    if _runs_under.get(_key(node)) != node.python:  # not the user's own runner
        _runs_under[_key(node)] = result.python
    if result.installed:
        log.info("node %s: runner %s installed in %.1fs", node.name, result.version, result.seconds)
        # A runner already running has the old code loaded: stop it (jobs live on).
        stop = f"{shlex.quote(result.python)} -m nvq_runner stop --home {shell_path(node.home)}"
        await run_command(conn, stop, timeout=30, node=node)
    return result


def ssh_opener(node: NodeConfig, queue: QueueConfig) -> Opener:
    checked = False

    async def open_channel() -> ByteChannel:
        nonlocal checked
        conn = await connect(node, queue)
        try:
            if not checked:
                if runner_python(node) != node.python or not await imports_runner(conn, node):
                    await install_runner(conn, node)
                else:
                    _runs_under[_key(node)] = node.python  # the user's own: as is
                checked = True
            return await open_runner_channel(conn, runner_node(node), owns_connection=True)
        except BaseException:
            conn.close()
            raise

    return open_channel
