"""Requests about the daemon itself: ping, stop, alerts and their acknowledgement,
backups."""

from __future__ import annotations

import os
from typing import Any

from nvq import __version__
from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import RequestError, map_exceptions


async def ping(ctx: Context, req: c.Ping, user: str) -> tuple[Any, int]:
    return {"pid": os.getpid(), "version": __version__}, 0


async def stop_daemon(ctx: Context, req: c.StopDaemon, user: str) -> tuple[Any, int]:
    # The server stops the daemon once this reply is on its way. The runners stay
    # (by design: their jobs run on); the reply says how many, for the CLI to say.
    state = ctx.state
    connected = [n for n in state.nodes.values() if n.send is not None]
    running = sum(len(js) for js in state.jobs_by_node().values())
    reply = c.DaemonStopping(stopping=True, runners_left=len(connected), jobs_running=running)
    return reply, 0


async def alerts(ctx: Context, req: c.Alerts, user: str) -> tuple[Any, int]:
    shown = await ctx.ops.alerts(req.include_acked)
    # Non-zero while anything is unacknowledged: a cheap health check.
    return shown, 1 if any(a.acked_at is None for a in shown) else 0


async def ack(ctx: Context, req: c.Ack, user: str) -> tuple[Any, int]:
    # An unknown alert id: the alerts table's ack names it before changing anything.
    with map_exceptions({LookupError: RequestError}):
        return await ctx.ops.ack(req.ids, by=user), 0


async def backup(ctx: Context, req: c.Backup, user: str) -> tuple[Any, int]:
    return await ctx.ops.backup(req.path), 0
