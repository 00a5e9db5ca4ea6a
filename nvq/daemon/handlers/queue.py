"""`nvq queue status|nodes|drain|resume|ignore|unignore|events`: the queue as a whole,
its nodes and their drain/ignore flags, the event log."""

from __future__ import annotations

import os

import msgspec

from nvq import __version__
from nvq import control as c
from nvq.config.reader import file_stamp
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.machines.card_flags import card_flag
from nvq.daemon.machines.unreachable import node_reassign_at, out_of_reach
from nvq.daemon.placement import reserving
from nvq.daemon.placement.array_summaries import summarise_arrays
from nvq.daemon.placement.slots import node_runtime
from nvq.daemon.placement.views import gpu_views, with_health
from nvq.domain import request
from nvq.domain.card_marks import parse_card
from nvq.domain.permissions import ANYONE, admin
from nvq.model import ACTIVE_STATES, Event, JobState, NewEvent, NodeView, Tx

_FLAG_EVENTS = {
    ("drained", True): "node_drained",
    ("drained", False): "node_resumed",
    ("ignored", True): "node_ignored",
    ("ignored", False): "node_unignored",
}


def node_views(state: State, *, include_ignored: bool = False) -> list[NodeView]:
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
    if state.pilots is not None:
        views = state.pilots.node_views(views)
    reserving.mark_cards(state, views)
    return views


@handles(c.Status, may=ANYONE)
async def status(ctx: Context, req: c.Status, user: str) -> c.QueueStatus:
    state = ctx.state
    counts = await state.store.state_counts()
    shown = ACTIVE_STATES | {JobState.HELD, JobState.PAUSED}
    active = sorted((j for j in state.jobs.values() if j.state in shown), key=lambda j: j.id)
    active, arrays = await summarise_arrays(state.store, active)
    doc = {
        "daemon": {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": state.started_at,
            "home": str(state.home),
        },
        "counts": {s.value: counts.get(s.value, 0) for s in JobState},
        "pending_reaps": len(state.reaps),
        "placement": state.placement_stats,
        "nodes": node_views(state),
        "jobs": [request.view_of(j) for j in active],
        **await ctx.ops.status(),  # open alerts, notify health, last backup, keeper
    }
    doc["arrays"] = arrays
    doc["needs_restart"] = state.needs_restart
    doc["config_changed"] = (file_stamp(state.config.path) != state.config.read_stamp
                             or bool(state.needs_restart))
    return msgspec.convert(doc, c.QueueStatus)


@handles(c.Nodes, may=ANYONE)
async def nodes(ctx: Context, req: c.Nodes, user: str) -> list[NodeView]:
    return node_views(ctx.state, include_ignored=req.include_ignored)


@handles(c.NodeFlag, may=admin("drain, resume or ignore a node"))
async def node_flag(ctx: Context, req: c.NodeFlag, user: str) -> NodeView:
    """drain/resume (no new placements) and ignore/unignore (no link at all); drain
    and resume of one card (`NODE:IDX`)."""
    state, flag, value = ctx.state, req.flag, req.value
    card = parse_card(req.node)
    if card is not None and flag == "drained":
        name = await card_flag(state, *card, drained=value, user=user)
        return next(v for v in node_views(state, include_ignored=True) if v.name == name)
    async with locked(state) as held:
        node = state.find_node(req.node)
        if flag == "ignored" and value and state.jobs_on(node.name):
            raise RequestError(
                f"node {node.name} has running jobs; drain it and let them finish first"
            )
        setattr(node, flag, value)
        if flag == "ignored" and not value:
            node.stopped = False  # `node start`: a stopped node's runner comes back
        if flag == "drained":
            await state.store.save_node(node.name, drained=value)
        else:
            await state.store.save_node(node.name, ignored=value)
        kind = _FLAG_EVENTS[(flag, value)]
        await held.commit(Tx(events=[NewEvent(kind, None, node.name, {})]), Effects(kick=True))
        if flag == "ignored" and value and node.link_scope is not None:
            node.link_scope.cancel()
        state.notify()
    view = next(v for v in node_views(state, include_ignored=True) if v.name == node.name)
    return view


@handles(c.Events, may=ANYONE)
async def events(ctx: Context, req: c.Events, user: str) -> list[Event]:
    return await ctx.state.store.events(since=req.since, limit=req.limit, job_id=req.job_id)
