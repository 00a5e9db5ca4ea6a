"""The daemon's side of staging images on nodes (`StageImage` → `ImageStaged`) and of
listing them (`ListImages` → `NodeImages`): the answers by request number, and whether
a node can be asked at all. The request
itself is `nvq.daemon.handlers.image`."""

from __future__ import annotations

from nvq.daemon.core.awaited import Awaited
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.placement.slots import node_runtime
from nvq_runner import protocol as p

STAGE_TIMEOUT = 3600.0  # one node's fetch and load of a large image
STAGED = Awaited[p.ImageStaged](STAGE_TIMEOUT)  # answers, by req, from runner_events
LISTED = Awaited[p.NodeImages](60.0)  # `ListImages` answered (the runtime's client is slow)


def refusal(node: NodeRuntime) -> str | None:
    """Why `node` cannot be asked to stage an image now (None: it can)."""
    hello = node.hello
    if node.ignored:
        return f"the node is {node.shown_state}"
    if hello is None or node.send is None or node.state != "up":
        return f"not connected ({node.error or node.shown_state})"
    if "images" not in hello.features:
        return "its runner predates image staging (nvq node restart after upgrading)"
    runtime = node_runtime(node.config.runtime if node.config else None, hello.runtimes)
    if runtime not in ("podman", "docker"):
        return "no container runtime that can load an image (podman or docker)"
    return None
