"""`nvq queue busy|forbid-busy-assign|allow-busy-assign`: machines lent to the
queue: a node's busy mode, an owner's choice to keep their own jobs off their busy
nodes."""

from __future__ import annotations

import msgspec

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import ANYONE, admin


@handles(c.BusyMode, may=lambda r: ANYONE if r.mode is None else admin("set a node's busy mode"))
async def busy_mode(ctx: Context, req: c.BusyMode, user: str) -> c.BusyView:
    if req.mode is None:
        return msgspec.convert(ctx.machines.busy_view(ctx.state.find_node(req.node)), c.BusyView)
    return msgspec.convert(await ctx.machines.set_busy_mode(req.node, req.mode), c.BusyView)


@handles(c.BusyAssign, may=admin("forbid or allow jobs on busy nodes"))
async def busy_assign(ctx: Context, req: c.BusyAssign, user: str) -> c.BusyAssignment:
    return msgspec.convert(await ctx.machines.set_forbid(user, req.forbid), c.BusyAssignment)
