"""A node link's pump: a write into a channel that died ends that connection with a
reason (the link reconnects), and never escapes to stop the daemon."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from nvq.daemon.link import _pump
from nvq.daemon.nodes import NodeRuntime, Sender
from nvq_runner import protocol as p


class DeadChannel:
    """Reads block (a frozen link); the first write finds the channel gone."""

    async def receive(self) -> bytes:
        await anyio.sleep_forever()
        return b""

    async def send(self, data: bytes) -> None:
        raise anyio.BrokenResourceError("Channel not open for sending")

    async def aclose(self) -> None:
        pass


class Events:
    async def on_connected(self, node: NodeRuntime, send: Sender) -> None:
        send(p.Ack(1))  # anything to write

    async def on_message(self, node: NodeRuntime, msg: p.RunnerMsg) -> None:
        pass

    async def on_messages(self, node: NodeRuntime, msgs: Sequence[p.RunnerMsg]) -> None:
        pass

    async def on_disconnected(self, node: NodeRuntime, error: str | None) -> None:
        pass

    async def check_down(self, node: NodeRuntime) -> None:
        pass

    async def wait_unignored(self, node: NodeRuntime) -> None:
        pass

    def lease(self) -> float | None:
        return 3.0


@pytest.mark.anyio
async def test_a_write_into_a_dead_channel_ends_the_connection_not_the_daemon() -> None:
    node = NodeRuntime(name="n1", config=None)
    with anyio.fail_after(10):
        reason = await _pump(Events(), node, DeadChannel())
    assert reason == "connection lost: Channel not open for sending"
    assert node.send is None
