"""A node whose link is down while the lease rule still holds its jobs: since when,
and when they may run elsewhere (what `queue nodes`, `job ls`, `job show`, the TUI
and the web page count down to). A view: the jobs stay `running` in the store."""

from __future__ import annotations

import time

from nvq.config.lease import reassign_at
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State


def node_reassign_at(state: State, node: NodeRuntime) -> float:
    """When the lease rule (nvq.config.lease) first lets the jobs of this node, out of
    reach since `down_since`, run elsewhere."""
    queue = state.config.queue
    since = node.down_since if node.down_since is not None else time.time()
    return reassign_at(since, queue.node_grace, queue.kill_grace, node.lease_book.until)


def out_of_reach(node: NodeRuntime | None) -> bool:
    return (node is not None and node.down_since is not None and node.state == "connecting"
            and not node.ignored)


def reassign_times(state: State) -> dict[str, tuple[float, float]]:
    """Node → (unreachable since, reassign at), for every node out of reach."""
    return {
        name: (node.down_since, node_reassign_at(state, node))
        for name, node in state.nodes.items()
        if out_of_reach(node) and node.down_since is not None
    }
