"""Requests about the daemon itself: ping, stop, alerts and their acknowledgement,
backups."""

from __future__ import annotations

import os

import msgspec

from nvq import __version__
from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import RequestError, map_exceptions


async def ping(ctx: Context, req: c.Ping, user: str) -> c.Pong:
    return c.Pong(pid=os.getpid(), version=__version__)


async def reload(ctx: Context, req: c.Reload, user: str) -> c.Reloaded:
    if ctx.reload is None:
        raise RequestError("this daemon cannot reload its config")
    return await ctx.reload()


async def stop_daemon(ctx: Context, req: c.StopDaemon, user: str) -> c.DaemonStopping:
    # The server stops the daemon once this reply is on its way. The runners stay
    # (by design: their jobs run on); the reply says how many, for the CLI to say.
    state = ctx.state
    connected = [n for n in state.nodes.values() if n.send is not None]
    running = sum(len(js) for js in state.jobs_by_node().values())
    reply = c.DaemonStopping(stopping=True, runners_left=len(connected), jobs_running=running)
    return reply


async def alerts(ctx: Context, req: c.Alerts, user: str) -> c.Coded[list[c.Alert]]:
    shown = await ctx.ops.alerts(req.include_acked)
    # Non-zero while anything is unacknowledged: a cheap health check.
    return c.Coded(shown, 1 if any(a.acked_at is None for a in shown) else 0)


async def ack(ctx: Context, req: c.Ack, user: str) -> list[c.Alert]:
    # An unknown alert id: the alerts table's ack names it before changing anything.
    with map_exceptions({LookupError: RequestError}):
        return await ctx.ops.ack(req.ids, by=user)


async def backup(ctx: Context, req: c.Backup, user: str) -> c.BackupMade:
    return msgspec.convert(await ctx.ops.backup(req.path), c.BackupMade)
