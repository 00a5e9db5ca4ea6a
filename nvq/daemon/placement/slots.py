"""What each node can hold now, as placement sees it (`NodeSlot`): its cards less the
memory of foreign processes and of the queue's jobs, host memory, busy owners, fences.
A node whose inputs did not change since the last pass keeps its slot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import SlotCache
from nvq.daemon.placement.views import gpu_views
from nvq.domain.card_share import holds_whole
from nvq.domain.matching import memory_free, node_cuda
from nvq.domain.placement import GpuSlot, NodeSlot
from nvq.model import JobRecord


def node_matching(node: NodeRuntime, on_node: Sequence[JobRecord]) -> dict[str, Any]:
    """NodeSlot's matching fields: driver CUDA version and host memory."""
    hello = node.hello
    if hello is None:
        return {}
    promised = sum(j.spec.memory_mb for j in on_node)
    sample_free = node.sample.mem_free_mb if node.sample else None
    return {
        "cuda": node_cuda(hello.cuda),
        "runtime": node_runtime(node.config.runtime if node.config else None, hello.runtimes),
        "memory_total_mb": hello.mem_total_mb or None,
        "memory_free_mb": memory_free(hello.mem_total_mb or None, sample_free, promised),
    }


def node_runtime(configured: str | None, found: Sequence[str]) -> str:
    """The runtime image jobs run through: `[[nodes]] runtime` where the node has it,
    else the first the runner found ("": none, so no image job goes there)."""
    if configured is not None:
        return configured if configured in found else ""
    return found[0] if found else ""


def node_slots(
    state: State, inputs: PlacementInputs, cache: SlotCache | None = None
) -> list[NodeSlot]:
    """Every reporting node's slot; `cache` (placement's memory) keeps the slots of
    nodes whose inputs did not change."""
    slots: list[NodeSlot] = []
    headroom = state.config.queue.headroom_mb
    share = state.config.queue.share_cards
    by_node = state.jobs_by_node()
    for node in state.nodes.values():
        if node.hello is None or node.ignored:
            continue
        on_node = by_node.get(node.name, [])
        extra = inputs.slot_fields(node)
        # Not while an old attempt owed a kill may still hold its cards.
        accepting = node.accepting and not inputs.fenced(node.name)
        # Everything the slot is made of: an unchanged node (the common case after an
        # event elsewhere) keeps its slot, instead of its cards being worked out again.
        key = (node.hello, node.sample, accepting, node.open_cards, node.out_cards, headroom,
               share, extra, *on_node)
        cached = cache.get(node.name) if cache is not None else None
        if cached is not None and _same(cached[0], key):
            slots.append(cached[1])
            continue
        slot = _node_slot(node, on_node, headroom, accepting, extra, share)
        if cache is not None:
            cache[node.name] = (key, slot)
        slots.append(slot)
    return slots


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def _node_slot(
    node: NodeRuntime, on_node: list[JobRecord], headroom: int, accepting: bool,
    extra: dict[str, Any], share: bool = False,
) -> NodeSlot:
    assert node.hello is not None
    views = gpu_views(
        node.hello.gpus,
        node.sample.gpus if node.sample and node.accepting else None,
        on_node,
        headroom_mb=headroom,
        allow=node.usable_cards,
    )
    out = node.out_cards
    # Cards a running job holds whole (nvq.domain.card_share): no job goes on them.
    held = {i for j in on_node if holds_whole(j, share) for i in j.gpus}
    gpus = [
        GpuSlot(
            index=v.index,
            total_mb=v.mem_total_mb,
            foreign_mb=v.external_mem_mb,
            queue_mb=v.mem_total_mb - v.external_mem_mb - headroom - v.free_mb,
            schedulable=v.schedulable,
            out=v.index in out,
            # the card's utilisation counts as foreign while foreign work is on it
            foreign_util=(v.util_percent or 0) if v.external_procs or v.external_mem_mb else 0,
            queue_jobs=len(v.jobs),
            held=v.index in held,
        )
        for v in views
    ]
    return NodeSlot(
        name=node.name,
        accepting=accepting,
        gpus=gpus,
        cpu_jobs=sum(1 for j in on_node if not j.gpus),
        running_jobs=len(on_node),
        **node_matching(node, on_node),
        **extra,
    )
