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
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.machines.card_flags import card_flag
from nvq.daemon.machines.node_views import node_views
from nvq.daemon.placement.array_summaries import summarise_arrays
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
        "placement": ctx.memory.placement_stats,
        "nodes": node_views(state, ctx.machines.pilots),
        "jobs": [request.view_of(j) for j in active],
        **await ctx.ops.status(),  # open alerts, notify health, last backup, keeper
    }
    doc["arrays"] = arrays
    needs_restart = ctx.reloader.needs_restart if ctx.reloader is not None else []
    doc["needs_restart"] = needs_restart
    doc["config_changed"] = (file_stamp(state.config.path) != state.config.read_stamp
                             or bool(needs_restart))
    return msgspec.convert(doc, c.QueueStatus)


@handles(c.Nodes, may=ANYONE)
async def nodes(ctx: Context, req: c.Nodes, user: str) -> list[NodeView]:
    return node_views(ctx.state, ctx.machines.pilots, include_ignored=req.include_ignored)


@handles(c.NodeFlag, may=admin("drain, resume or ignore a node"))
async def node_flag(ctx: Context, req: c.NodeFlag, user: str) -> NodeView:
    """drain/resume (no new placements) and ignore/unignore (no link at all); drain
    and resume of one card (`NODE:IDX`)."""
    state, flag, value = ctx.state, req.flag, req.value
    card = parse_card(req.node)
    if card is not None and flag == "drained":
        name = await card_flag(state, *card, drained=value, user=user)
        return next(v for v in node_views(state, ctx.machines.pilots, include_ignored=True) if v.name == name)
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
    view = next(v for v in node_views(state, ctx.machines.pilots, include_ignored=True) if v.name == node.name)
    return view


@handles(c.Events, may=ANYONE)
async def events(ctx: Context, req: c.Events, user: str) -> list[Event]:
    return await ctx.state.store.events(since=req.since, limit=req.limit, job_id=req.job_id)
