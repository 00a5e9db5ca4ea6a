"""`job forward`: one TCP connection to a port on a running job's node, relayed on the
control socket. Over an SSH node it is a direct-tcpip channel on the runner link's own
connection (sshd connects to the port on the node; no second login, nothing exposed);
on the queue host's own node, a plain local connection."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import anyio.abc
import asyncssh
from anyio.abc import SocketStream

from nvq import control as c
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.machines.node_pipes import check_reachable, open_on_node
from nvq.daemon.sessions.session_io import ClientFrames, Early, reply_frame, running_job
from nvq.daemon.ssh.streams import SshStream

# Where on the node the port is reached: the loopback, so a server that listens
# only there (Jupyter's default) is reachable too.
NODE_HOST = "localhost"


async def connect_port(state: State, node: NodeRuntime, port: int) -> anyio.abc.ByteStream:
    check_reachable(node)
    if node.config is None:
        try:
            return await anyio.connect_tcp("127.0.0.1", port)
        except OSError as exc:
            raise RequestError(f"nothing listens on port {port} of {node.name}: "
                               f"{exc.strerror or exc}") from None
    if node.runner_step is not None:  # a pilot: its ports are the compute node's
        return await open_on_node(state, node, ["port-connect", "--port", str(port)])
    conn = getattr(node.channel, "connection", None)
    if conn is None:
        raise RequestError(f"node {node.name} is not connected over SSH right now")
    try:
        reader, writer = await conn.open_connection(NODE_HOST, port)
    except (OSError, asyncssh.Error) as exc:
        raise RequestError(f"nothing listens on port {port} of {node.name}: {exc}") from None
    return SshStream(reader, writer)


async def serve_forward(
    ctx: Context, stream: SocketStream, req: c.Forward, early: Early
) -> None:
    job = await running_job(ctx, req.id)
    port = req.port or job.port
    if not port:
        raise RequestError(f"job {job.id} has no port of its own: name one")
    assert job.node is not None
    check_reachable(ctx.state.nodes[job.node])
    where: dict[str, Any] = {"job": job.id, "node": job.node, "port": port}
    if req.check:
        await stream.send(reply_frame(c.Done(data=where)))
        return
    tcp = await connect_port(ctx.state, ctx.state.nodes[job.node], port)
    client = ClientFrames(stream, early)
    lock = anyio.Lock()

    async def send(msg: c.Reply) -> None:
        async with lock:
            await stream.send(reply_frame(msg))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read)

            async def upstream() -> None:
                async with client.inbox:
                    async for msg in client.inbox:
                        if isinstance(msg, c.TermInput):
                            await tcp.send(msg.data)
                await tcp.send_eof()

            tg.start_soon(upstream)
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError,
                                     anyio.ClosedResourceError):
                while True:
                    await send(c.Chunk(await tcp.receive()))
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await send(c.Done(data=where))
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await tcp.aclose()
