"""Requests about machines lent to the queue: a node's busy mode, an owner's choice
to keep their own jobs off their busy nodes, and a job's stored artifacts."""

from __future__ import annotations

from typing import Any

from nvq import control as c
from nvq.daemon.context import Context


async def job_artifacts(ctx: Context, req: c.JobArtifacts, user: str) -> tuple[Any, int]:
    await ctx.state.get_job(req.id)  # no such job: one line, exit 1
    return ctx.machines.artifacts.listing(req.id), 0


async def busy_mode(ctx: Context, req: c.BusyMode, user: str) -> tuple[Any, int]:
    if req.mode is None:
        return ctx.machines.busy_view(ctx.state.find_node(req.node)), 0
    return await ctx.machines.set_busy_mode(req.node, req.mode), 0


async def busy_assign(ctx: Context, req: c.BusyAssign, user: str) -> tuple[Any, int]:
    return await ctx.machines.set_forbid(user, req.forbid), 0
