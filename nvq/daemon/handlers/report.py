"""`Report`: the usage report over a window, read on a connection of its own in a
worker thread (a long history must not hold up the daemon's own writes)."""

from __future__ import annotations

import anyio

from nvq import control as c
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain import report
from nvq.domain.permissions import ANYONE
from nvq.home import Home
from nvq.store.report import read_window


@handles(c.Report, may=ANYONE)
async def usage_report(ctx: Context, req: c.Report, user: str) -> report.UsageReport:
    if req.by not in report.BY:
        raise BadRequest(f"--by {req.by!r}: expected one of {', '.join(report.BY)}")
    if req.until <= req.since:
        raise BadRequest("--until must be later than --since")
    db = Home(ctx.state.home).db
    rows, total = await anyio.to_thread.run_sync(
        lambda: read_window(db, req.since, req.until, req.by)
    )
    return report.build(rows, total, by=req.by, since=req.since, until=req.until)
