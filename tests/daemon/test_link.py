"""A node link's pump: a write into a channel that died ends that connection with a
reason (the link reconnects), and never escapes to stop the daemon. Its heartbeat: a
reload's new lease reaches the runner at once, however busy the link."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from nvq.daemon.core.nodes import NodeRuntime, Sender
from nvq.daemon.machines.link import Heartbeat, _pump
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


@pytest.mark.anyio
async def test_a_reloaded_lease_goes_out_at_once_on_a_busy_link() -> None:
    """The soak's 73 attempts of one job: a reload lengthened the lease 2s -> 14s; a
    heartbeat went out only after 2.8s idle (14s / 5), so the runner, still on 2s,
    fenced its jobs in every lull of 2-2.8s, and a link never idle that long never got
    the new length at all."""
    node = NodeRuntime(name="n1", config=None)
    lease = 2.0
    told: list[float] = []
    changed = anyio.Event()

    def post(msg: p.DaemonMsg) -> bool:
        assert isinstance(msg, p.Heartbeat)
        told.append(msg.lease)
        if msg.lease == 14.0:
            changed.set()
        return True

    beat = Heartbeat(lambda: lease, node, post)

    async def busy() -> None:  # other frames keep the link from ever being idle
        while True:
            beat.wrote()
            await anyio.sleep(0.02)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(beat.run)
            while not told:
                await anyio.sleep(0.01)
            tg.start_soon(busy)
            lease = 14.0  # the reload
            await changed.wait()
            tg.cancel_scope.cancel()
    assert told[0] == 2.0 and told[-1] == 14.0, told
