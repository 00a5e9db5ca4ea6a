"""`GpuHistory`: the cards' down-sampled history (kept by nvq.daemon.machines.gpu_history)."""

from __future__ import annotations

import time

import msgspec

from nvq import control as c
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import ANYONE
from nvq.store import gpu_history as history_table

DAY = 86400.0


@handles(c.GpuHistory, may=ANYONE)
async def gpu_history(ctx: Context, req: c.GpuHistory, user: str) -> list[c.GpuPoint]:
    if req.step < 60:
        raise BadRequest("step: the history holds one point a minute; ask for 60 s or more")
    since = req.since if req.since is not None else time.time() - DAY
    rows = await ctx.state.store.sync(
        lambda conn: history_table.read(conn, since=since, node=req.node, step=req.step)
    )
    fields = history_table.COLUMNS.split(", ")
    return msgspec.convert([dict(zip(fields, row, strict=True)) for row in rows], list[c.GpuPoint])
