"""A pilot's link events, as any node's, except:

* a pilot whose runner is not this queue's version is refused before the daemon acts
  on its Hello: nvq installs the pilots' runner itself, so a different one is a
  site-managed `python` left behind by an upgrade, and running jobs on it would mix
  versions silently;
* until its runner first answers, a pilot is `starting`, never down: its allocation
  is alive (Slurm says when it ends, `DaemonPilots.pilot_ended`) and a site's setup
  may take minutes, so `node_grace` counts from the runner's first connection;
* its attach step opens through the login node even while the runner is away, so an
  open step is not news: a pilot reported down stays down until its runner answers
  again (one `node_down` per outage)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import nvq
from nvq.daemon.core.nodes import NodeRuntime, Sender
from nvq.daemon.machines.link import NodeEvents
from nvq_runner import protocol as p

STARTING = "starting"  # a pilot whose runner has not answered yet
Refuse = Callable[[NodeRuntime, str], Awaitable[None]]
Accepted = Callable[[NodeRuntime], None]


def version_mismatch(node: str, hello: p.Hello) -> str | None:
    """Why this runner is refused, or None when it is this queue's version."""
    if hello.runner_version == nvq.__version__:
        return None
    return (
        f"pilot {node} runs nvq_runner {hello.runner_version}, this queue runs "
        f"{nvq.__version__}: install this version for the cluster's `python`, or remove "
        "`python` from its [[clusters]] table so that nvq installs it"
    )


class PilotLinkEvents:
    def __init__(self, inner: NodeEvents, refuse: Refuse, accepted: Accepted) -> None:
        self.inner = inner
        self.refuse = refuse
        self.accepted = accepted

    async def _refused(self, node: NodeRuntime, msg: p.RunnerMsg) -> bool:
        if not isinstance(msg, p.Hello):
            return False
        why = version_mismatch(node.name, msg)
        if why is not None:
            await self.refuse(node, why)
        else:
            self.accepted(node)
        return why is not None

    async def on_connected(self, node: NodeRuntime, send: Sender) -> None:
        was = node.state
        await self.inner.on_connected(node, send)
        if node.hello is None:
            node.state = STARTING
        elif was == "down":
            node.state = "down"

    async def on_message(self, node: NodeRuntime, msg: p.RunnerMsg) -> None:
        if not await self._refused(node, msg):
            await self.inner.on_message(node, msg)

    async def on_messages(self, node: NodeRuntime, msgs: Sequence[p.RunnerMsg]) -> None:
        for i, msg in enumerate(msgs):
            if await self._refused(node, msg):
                msgs = msgs[:i]  # nothing after a refused Hello is acted on
                break
        if msgs:
            await self.inner.on_messages(node, msgs)

    async def on_disconnected(self, node: NodeRuntime, error: str | None) -> None:
        await self.inner.on_disconnected(node, error)

    async def check_down(self, node: NodeRuntime) -> None:
        if node.hello is None:
            return  # starting: its grace begins once its runner has answered
        await self.inner.check_down(node)

    async def wait_unignored(self, node: NodeRuntime) -> None:
        await self.inner.wait_unignored(node)

    def lease(self) -> float | None:
        return self.inner.lease()
