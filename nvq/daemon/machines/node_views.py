"""Each node as the queue shows it (`NodeView`): its cards' memory split and health,
its jobs, how long it may stay out of reach, the reservations on its cards and, for
Slurm pilots, their compute host. Read by `queue status|nodes`, `image ls` and the
GPU history (`gpu_history`)."""

from __future__ import annotations

from nvq.daemon.core.state import State
from nvq.daemon.machines.unreachable import node_reassign_at, out_of_reach
from nvq.daemon.placement import reserving
from nvq.daemon.placement.inputs import PilotNodes
from nvq.daemon.placement.slots import node_runtime
from nvq.daemon.placement.views import gpu_views, with_health
from nvq.model import NodeView


def node_views(
    state: State, pilots: PilotNodes | None, *, include_ignored: bool = False
) -> list[NodeView]:
    """Every node as `queue nodes`, the status page and the GPU history show it."""
    views: list[NodeView] = []
    headroom = state.config.queue.headroom_mb
    by_node = state.jobs_by_node()
    for node in state.nodes.values():
        if node.ignored and not include_ignored:
            continue
        on_node = by_node.get(node.name, [])
        hello = node.hello
        # The last sample a lost link left: foreign use stays what it was last seen to be.
        sample = node.sample or node.last_sample
        grace = out_of_reach(node)
        views.append(
            NodeView(
                name=node.name,
                host=node.host,
                state=node.shown_state,
                last_seen=node.last_seen,
                drained=node.drained,
                hostname=hello.hostname if hello else None,
                backend=hello.backend if hello else None,
                cuda=hello.cuda if hello else None,
                runtime=node_runtime(node.config.runtime if node.config else None,
                                     hello.runtimes) if hello else None,
                images=list(node.images.images) if node.images is not None else None,
                host_mem_total_mb=hello.mem_total_mb if hello else None,
                host_mem_free_mb=node.sample.mem_free_mb if node.sample else None,
                running_jobs=len(on_node),
                cpu_jobs=sum(1 for j in on_node if not j.gpus),
                error=node.error,
                unreachable_since=node.down_since if grace else None,
                grace_ends_at=node_reassign_at(state, node) if grace else None,
                gpus=with_health(gpu_views(
                    hello.gpus,
                    sample.gpus if sample else None,
                    on_node,
                    headroom_mb=headroom,
                    allow=node.open_cards,
                ), node.card_marks)
                if hello
                else [],
            )
        )
    if pilots is not None:
        views = pilots.node_views(views)
    reserving.mark_cards(state, views)
    return views
