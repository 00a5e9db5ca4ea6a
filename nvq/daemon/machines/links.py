"""Each node's link task under a cancel scope of its own, so that one node's link can
end (a node removed from config.toml, once idle) while the others run on. Its opener
reads the node's config when it connects, so a node whose connection changed
reconnects with the new one after its link is closed (`node.link_scope`)."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.abc

from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.machines.link import NodeEvents, run_link
from nvq.daemon.ssh.byte_channel import Opener


class Links:
    def __init__(self, tg: anyio.abc.TaskGroup, events: NodeEvents,
                 opener: Callable[[NodeRuntime], Opener]) -> None:
        self.tg = tg
        self._events = events
        self._opener = opener
        self._scopes: dict[str, anyio.CancelScope] = {}

    def start(self, node: NodeRuntime) -> None:
        scope = anyio.CancelScope()
        self._scopes[node.name] = scope
        self.tg.start_soon(self._run, node, scope)

    async def _run(self, node: NodeRuntime, scope: anyio.CancelScope) -> None:
        with scope:
            await run_link(self._events, node, self._opener(node))

    def stop(self, name: str) -> None:
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
