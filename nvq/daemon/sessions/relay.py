"""A job talks to its queue: the connections a runner relays from a running attempt's
`$NVQ_SOCKET` (nvq_runner/protocol.py), served by the control server as the job's
owner, with the same permission table as any CLI call of theirs.

Each relayed connection is a `RelayStream`: the bytes the runner carried up arrive in
it, and what the control server writes goes back down as `RelayDown`. A connection is
served only while its attempt runs on the node that relays it; once the attempt has
ended (or a newer one runs, or it runs elsewhere) it is answered with a refusal."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.model import JobState
from nvq_runner.protocol import RelayDown, RelayUp

log = logging.getLogger("nvq.relay")
BUFFERED = 64  # pieces of one request carried up before it is read; past it, dropped
# The control server's two answers to a relayed connection (`serve_relayed` bound to
# the handlers' context, and `refuse_relayed`), handed in by `nvq.daemon.main`: the
# relay sits below the server that answers it.
Serve = Callable[[anyio.abc.ByteStream, str], Awaitable[None]]


class RelayStream(anyio.abc.ByteStream):
    """One relayed connection, as the control server reads and writes it."""

    def __init__(self, node: NodeRuntime, req: int) -> None:
        self._node, self._req = node, req
        self._up, self._received = anyio.create_memory_object_stream[bytes](BUFFERED)
        self._closed = False

    def feed(self, msg: RelayUp) -> bool:
        """What the runner carried up; False when the reader is this far behind."""
        try:
            if msg.data:
                self._up.send_nowait(msg.data)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        if msg.eof:
            self._up.close()
        return True

    def cut(self) -> None:
        """The link went: the client's side ends here, and nothing more goes down."""
        self._closed = True
        self._up.close()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._received.receive()

    async def send(self, item: bytes) -> None:
        if self._closed or not self._node.post(RelayDown(req=self._req, data=item)):
            raise anyio.BrokenResourceError
        await anyio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._node.post(RelayDown(req=self._req, eof=True))
        self._up.close()
        self._received.close()


def attempt_owner(state: State, node: str, job_id: int, attempt: int) -> str | None:
    """The user whose rights a relayed request has: the owner of `job_id`, when its
    attempt `attempt` runs on `node` now; else None."""
    job = state.jobs.get(job_id)
    if job is None or job.state is not JobState.RUNNING:
        return None
    if job.node != node or job.attempt != attempt:
        return None
    return job.user


class Relays:
    """Every relayed connection of every node, each served in its own task."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._open: dict[tuple[str, int], RelayStream] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._serve_as: Serve | None = None
        self._refuse: Serve | None = None

    async def run(
        self, serve: Serve, refuse: Serve, *, task_status: Any = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve relayed connections: `serve(stream, owner)` answers one as its job's
        owner, `refuse(stream, why)` turns one down."""
        async with anyio.create_task_group() as tg:
            self._tg, self._serve_as, self._refuse = tg, serve, refuse
            task_status.started()
            await anyio.sleep_forever()

    def on_up(self, node: NodeRuntime, msg: RelayUp) -> None:
        key = (node.name, msg.req)
        stream = self._open.get(key)
        if stream is None:
            if self._tg is None or (msg.eof and not msg.data):
                node.post(RelayDown(req=msg.req, eof=True))
                return
            stream = self._open[key] = RelayStream(node, msg.req)
            self._tg.start_soon(self._serve, node, msg, stream)
        if not stream.feed(msg):
            log.warning("node %s: relayed request %d is not read; dropped", node.name, msg.req)
            stream.cut()
            node.post(RelayDown(req=msg.req, eof=True))

    def drop(self, node: NodeRuntime) -> None:
        """The node's link went: its relayed connections end (the runner closes its
        side of each as well)."""
        for key in [k for k in self._open if k[0] == node.name]:
            self._open.pop(key).cut()

    async def _serve(self, node: NodeRuntime, first: RelayUp, stream: RelayStream) -> None:
        key = (node.name, first.req)
        assert self._serve_as is not None and self._refuse is not None  # set before _tg
        try:
            user = attempt_owner(self.state, node.name, first.job_id, first.attempt)
            if user is None:
                await self._refuse(
                    stream,
                    f"attempt {first.attempt} of job {first.job_id} no longer runs on "
                    f"{node.name}: only a running job talks to its queue",
                )
            else:
                await self._serve_as(stream, user)
        except Exception:
            log.exception("relayed request from node %s failed", node.name)
        finally:
            if self._open.get(key) is stream:
                del self._open[key]
            await stream.aclose()
