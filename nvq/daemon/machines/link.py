"""One task per node: open a channel to its runner, pump frames both ways, reconnect
with capped exponential backoff and jitter when the channel drops.

The transport is whatever `open_channel` returns: a Unix socket for the local node,
an SSH exec channel running `nvq_runner attach` for the others.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import anyio

from nvq.config.lease import heartbeat_interval
from nvq.daemon.core.nodes import NodeRuntime, Sender
from nvq.daemon.ssh.byte_channel import ByteChannel, Opener
from nvq_runner import protocol as p

log = logging.getLogger("nvq.link")

BACKOFF_FIRST = 0.2
BACKOFF_MAX = 30.0
SEND_QUEUE = 100_000


class NodeEvents(Protocol):
    """What a link tells the daemon about its node, and the one thing it waits on."""

    async def on_connected(self, node: NodeRuntime, send: Sender) -> None:
        """A channel is open; `send` queues frames to the runner."""
        ...

    async def on_message(self, node: NodeRuntime, msg: p.RunnerMsg) -> None: ...

    async def on_messages(self, node: NodeRuntime, msgs: Sequence[p.RunnerMsg]) -> None:
        """What one read delivered, in order (events that came together commit together)."""
        ...

    async def on_disconnected(self, node: NodeRuntime, error: str | None) -> None:
        """The channel ended (or could not be opened); `error` says why, None if asked."""
        ...

    async def check_down(self, node: NodeRuntime) -> None:
        """Called after each failure: the node may now have been away too long."""
        ...

    async def wait_unignored(self, node: NodeRuntime) -> None:
        """Return once the node is no longer ignored."""
        ...

    def lease(self) -> float | None:
        """The lease runners are given (`nvq.config.lease`); None: no lease."""
        ...


def backoff_delay(attempt: int) -> float:
    """Capped exponential backoff with full jitter, so many daemons (or many nodes
    returning at once) do not reconnect in lockstep."""
    cap = min(BACKOFF_MAX, BACKOFF_FIRST * (2**attempt))
    return random.uniform(cap / 2, cap)


async def run_link(events: NodeEvents, node: NodeRuntime, open_channel: Opener) -> None:
    failures = 0
    while True:
        if node.ignored:
            node.state = "down"
            await events.wait_unignored(node)
            continue
        error: str | None = None
        with anyio.CancelScope() as scope:
            node.link_scope = scope
            try:
                channel = await open_channel()
            except Exception as exc:  # any failure to reach the node is a retry
                error = str(exc) or type(exc).__name__
                node.error_permanent = bool(getattr(exc, "permanent", False))
                log.debug("node %s: connect failed: %s", node.name, error)
            else:
                failures = 0
                node.error_permanent = False
                node.channel = channel
                try:
                    error = await _pump(events, node, channel)
                finally:
                    node.channel = None
                    with anyio.CancelScope(shield=True):
                        await channel.aclose()
        node.link_scope = None
        if scope.cancelled_caught:
            error = "link closed by request"
        await events.on_disconnected(node, error)
        if node.down_since is None:
            node.down_since = time.time()
        await events.check_down(node)
        await anyio.sleep(backoff_delay(failures))
        failures += 1


async def _pump(events: NodeEvents, node: NodeRuntime, channel: ByteChannel) -> str | None:
    """Serve one connection until it ends; returns why it ended."""
    send, outbox = anyio.create_memory_object_stream[bytes](SEND_QUEUE)

    def post(msg: p.DaemonMsg) -> bool:
        try:
            send.send_nowait(p.encode_frame(msg))
            return True
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False

    lost: list[str] = []  # why the writer ended the connection

    async def writer() -> None:
        try:
            async with outbox:
                async for frame in outbox:
                    # Frames queued meanwhile (a pass's starts for this node) go out
                    # in the same write.
                    batch = [frame]
                    while True:
                        try:
                            batch.append(outbox.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    try:
                        await channel.send(b"".join(batch) if len(batch) > 1 else frame)
                    finally:  # even a failed write may have reached the runner
                        node.lease_book.wrote(time.time())
                    beat.wrote()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            # A write into a link that died ends this connection (the link
            # reconnects), never the daemon: a heartbeat is often the first to find
            # the channel gone.
            lost.append(f"connection lost: {exc or type(exc).__name__}")
            tg.cancel_scope.cancel()

    beat = Heartbeat(events.lease, node, post)

    reason: str | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        # The runner renewed its lease (whatever length it holds) on this connect.
        node.lease_book.wrote(time.time())
        await events.on_connected(node, post)
        frames = p.FrameReader()
        try:
            while True:
                data = await channel.receive()
                if not data:
                    reason = "runner closed the connection"
                    break
                msgs = [p.decode_runner_payload(payload) for payload in frames.feed(data)]
                if not beat.started and _grants_lease(msgs):
                    beat.started = True
                    tg.start_soon(beat.run)
                if msgs:
                    await events.on_messages(node, msgs)
        except anyio.EndOfStream:
            reason = "runner closed the connection"
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            reason = f"connection lost: {exc or type(exc).__name__}"
        except p.FrameError as exc:
            reason = str(exc)
            log.error("node %s: %s", node.name, exc)
        finally:
            node.send = None
            send.close()
            tg.cancel_scope.cancel()
    return reason or (lost[0] if lost else None)


def _grants_lease(msgs: Sequence[p.RunnerMsg]) -> bool:
    """This connection's runner said it keeps a lease (an older one would drop the
    link on a frame it does not know)."""
    return any(isinstance(m, p.Hello) and "lease" in m.features for m in msgs)


class Heartbeat:
    """The daemon's side of the lease: on a link idle for `heartbeat_interval`, a
    `Heartbeat` frame, so the runner knows its daemon is there (any frame renews the
    lease; this one also tells its length, read from the config each time, so a
    reload's lease goes out with the next one). The first goes out as soon as the
    runner's `Hello` arrives, and so does a changed length, idle link or not: the
    runner holds the length it was told last, and a longer lease's interval would
    outlast a shorter one still held (it fenced its jobs between two heartbeats, and
    a busy link never got the new length to it). Each is entered in the node's
    lease book."""

    def __init__(
        self, lease: Callable[[], float | None], node: NodeRuntime,
        post: Callable[[p.DaemonMsg], bool],
    ) -> None:
        self._lease = lease
        self._node = node
        self.started = False
        self._post = post
        self._last = 0.0
        self._told: float | None = None  # the length the last heartbeat carried

    def wrote(self) -> None:
        self._last = time.monotonic()

    def send(self, lease: float) -> bool:
        seq = self._node.lease_book.heartbeat(lease)
        self._told = lease
        return self._post(p.Heartbeat(lease, seq=seq))

    async def run(self) -> None:
        while True:
            # "off": none is granted. The runner keeps any length it had before (a
            # reload), renewed by every frame, and the book goes on counting it.
            lease = self._lease()
            if lease is None:
                await anyio.sleep(1.0)
                continue
            interval = heartbeat_interval(lease)
            idle = time.monotonic() - self._last
            if idle >= interval or lease != self._told:
                self.send(lease)
                await anyio.sleep(interval)
            else:
                await anyio.sleep(interval - idle)
