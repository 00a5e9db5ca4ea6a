"""The daemon itself: `Ping` (is one answering), `nvq daemon stop`, `nvq daemon reload`."""

from __future__ import annotations

import os

from nvq import __version__, stopped_mark
from nvq import control as c
from nvq.daemon.core.errors import RequestError
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import ANYONE, admin


@handles(c.Ping, may=ANYONE)
async def ping(ctx: Context, req: c.Ping, user: str) -> c.Pong:
    return c.Pong(pid=os.getpid(), version=__version__)


@handles(c.Reload, may=admin("reload the config"))
async def reload(ctx: Context, req: c.Reload, user: str) -> c.Reloaded:
    if ctx.reloader is None:
        raise RequestError("this daemon cannot reload its config")
    return await ctx.reloader.reload()


@handles(c.StopDaemon, may=admin("stop the daemon"))
async def stop_daemon(ctx: Context, req: c.StopDaemon, user: str) -> c.DaemonStopping:
    # The server stops the daemon once this reply is on its way. The runners stay
    # (by design: their jobs run on); the reply says how many, for the CLI to say.
    # The mark is the daemon's to leave: an admin who is a member cannot write in the
    # owner's home, and an observer must not start what a stop allowed here ended.
    state = ctx.state
    if req.planned:
        stopped_mark.leave(state.home, os.getpid(), by=user)
    connected = [n for n in state.nodes.values() if n.send is not None]
    running = sum(len(js) for js in state.jobs_by_node().values())
    reply = c.DaemonStopping(stopping=True, runners_left=len(connected), jobs_running=running)
    return reply
