"""A byte pipe to a command run on a node, beside its runner link: over the node's
existing SSH connection (a new exec channel; no second login), or as a local process
for the queue host's own node. What needs asyncssh is in nvq.daemon.ssh, imported when
a node is reached over SSH: a daemon with only its own node never loads it. Interactive sessions use it to reach a job's terminal
socket (`nvq_runner pty-attach`) and ports on the node."""

from __future__ import annotations

import contextlib
import shlex
import sys

import anyio
import anyio.abc
from anyio.streams.stapled import StapledByteStream

from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.machines.runner_stop import local_runner_home
from nvq_runner.identity import dir_name

ATTACH_WAIT = 30.0  # the terminal socket appears a moment after the job starts
SUN_PATH = 108  # sockaddr_un's path, with its NUL


def job_dir(state: State, node: NodeRuntime, job_id: int, nonce: str) -> str:
    """The job's directory on its node, as the node's shell should read it."""
    queue_id = state.store.queue_id if nonce else ""
    name = dir_name(job_id, queue_id, nonce)
    if node.config is None:
        return str(local_runner_home(state.config, state.home) / "jobs" / name)
    return f"{node.config.home.rstrip('/')}/jobs/{name}"


class _ProcessPipe(anyio.abc.ByteStream):
    """A local process's stdin/stdout as one byte stream; closing it ends the process."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._stream = StapledByteStream(process.stdin, process.stdout)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._stream.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._stream.send_eof()
        with anyio.move_on_after(2, shield=True):
            await self._process.wait()
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        await self._process.aclose()


def check_reachable(node: NodeRuntime) -> None:
    """A Slurm pilot's runner is reached through the login node, whose SSH connection
    does not lead to the compute node's sockets and ports; a pilot started before its
    script wrote `run` (no `runner_step`) is refused in words rather than tried on the
    wrong host."""
    if node.hello is not None and node.hello.allocated is not None and node.runner_step is None:
        raise RequestError(
            f"node {node.name} is a Slurm pilot this daemon cannot run steps on: job shell, "
            "exec and forward do not reach it (use srun --overlap on the cluster)"
        )


async def open_on_node(state: State, node: NodeRuntime, args: list[str]) -> anyio.abc.ByteStream:
    return await runner_pipe(node, args)


async def runner_pipe(node: NodeRuntime, args: list[str]) -> anyio.abc.ByteStream:
    """Run `python -m nvq_runner ARGS` on `node` (its runner's interpreter) and return
    its stdin/stdout. Raises RequestError when the node is not connected."""
    check_reachable(node)
    if node.config is None:
        process = await anyio.open_process(
            [sys.executable, "-m", "nvq_runner", *args], stderr=None,
        )
        return _ProcessPipe(process)
    channel = node.channel
    conn = getattr(channel, "connection", None)
    if conn is None:
        raise RequestError(f"node {node.name} is not connected over SSH right now")
    from nvq.daemon.ssh.channel import open_runner_channel
    from nvq.daemon.ssh.connection import shell_path
    from nvq.daemon.ssh.opener import runner_node

    cfg = runner_node(node.config)
    words = [shell_path(a) if a.startswith("~") else shlex.quote(a) for a in args]
    # A pilot: a step of its allocation, on the compute node, not the login node.
    runner = node.runner_step or f"{shell_path(cfg.python)} -m nvq_runner"
    return await open_runner_channel(conn, cfg, command=" ".join([runner, *words]))


async def attach_terminal(
    state: State, node: NodeRuntime, job_id: int, nonce: str
) -> anyio.abc.ByteStream:
    """The job's terminal socket (ptyhost.py), on an SSH node straight through sshd
    (direct-streamlocal: no shell, no Python started there) where its path allows;
    else through `nvq_runner pty-attach` on an exec channel."""
    check_reachable(node)
    sock = f"{job_dir(state, node, job_id, nonce)}/pty.sock"
    if (node.config is not None and node.runner_step is None and sock.startswith("/")
            and len(sock.encode()) < SUN_PATH):
        from nvq.daemon.ssh.streams import streamlocal

        stream = await streamlocal(node, sock, ATTACH_WAIT)
        if stream is not None:
            return stream
    return await open_on_node(state, node, ["pty-attach", "--sock", sock,
                                            "--wait", str(ATTACH_WAIT)])
