"""Stopping a node's runner process: on the queue host for the local node, over a
fresh SSH connection for the others (`python -m nvq_runner stop`). The runner's jobs
would live on (they are not its process group); callers stop only runners whose
jobs are gone."""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio

from nvq.config import Config
from nvq.daemon.core.nodes import NodeRuntime


def local_runner_home(config: Config, home: Path) -> Path:
    """The local node's runner home: `[queue] local_home`, else `$NVQ_HOME/node`."""
    queue = config.queue
    return Path(queue.local_home).expanduser() if queue.local_home else home / "node"


async def stop_runner(config: Config, home: Path, node: NodeRuntime) -> bool:
    """Stop `node`'s runner; False when none was running there."""
    if node.config is None:
        from nvq_runner.launcher import stop

        runner_home = local_runner_home(config, home)
        return await anyio.to_thread.run_sync(stop, runner_home)
    from nvq.daemon.ssh.connection import run_command, shell_path
    from nvq.daemon.ssh.opener import connect, runner_node

    conn = await connect(node.config, config.queue)
    try:
        python = shlex.quote(runner_node(node.config).python)
        command = f"{python} -m nvq_runner stop --home {shell_path(node.config.home)}"
        code, _, err = await run_command(conn, command, timeout=30, node=node.config)
    finally:
        conn.close()
    if code != 0:
        raise OSError(f"stopping the runner on {node.name} failed: {err.strip()}")
    return "no runner running" not in err
