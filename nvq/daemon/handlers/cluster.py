"""Requests about Slurm clusters: their pilots, and a person's say in how many."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import RequestError

if TYPE_CHECKING:
    from nvq.daemon.pilots import DaemonPilots


def _pilots(ctx: Context) -> DaemonPilots:
    if ctx.state.pilots is None:
        raise RequestError("no [[clusters]] in config.toml")
    # Here, not at the top: pilots bring asyncssh, which a daemon without [[clusters]]
    # or SSH nodes never loads (daemon/main.py starts them the same way).
    from nvq.daemon.pilots import DaemonPilots

    if not isinstance(ctx.state.pilots, DaemonPilots):
        raise RequestError("no [[clusters]] in config.toml")
    return ctx.state.pilots


FRESH_WAIT = 10.0  # at most this long for a fresh squeue before the last one is shown


async def cluster_status(ctx: Context, req: c.ClusterStatus, user: str) -> list[c.ClusterView]:
    pilots = _pilots(ctx)
    names = [req.name] if req.name is not None else sorted(pilots.managers)
    managers = [pilots.manager(name) for name in names]
    # Slurm's word as of now, not the last periodic pass (up to `poll` old: a pilot
    # scancelled a moment ago would still show running).
    for manager in managers:
        await manager.refreshed(FRESH_WAIT)
    return [_view(manager) for manager in managers]


def _view(manager: Any) -> c.ClusterView:
    return msgspec.convert(manager.view(), c.ClusterView)


def _drain_pilots(ctx: Context, cluster: str, drained: bool) -> None:
    """A drained cluster's pilots take no new jobs, so they fall idle and go."""
    for node in ctx.state.nodes.values():
        if node.name.startswith(f"{cluster}/"):
            node.drained = drained
    ctx.state.kick()


async def cluster_scale(ctx: Context, req: c.ClusterScale, user: str) -> c.ClusterView:
    if req.pilots is not None and req.pilots < 0:
        raise RequestError(f"cannot keep {req.pilots} pilots")
    manager = _pilots(ctx).manager(req.name)
    manager.scale(req.pilots)
    if req.pilots != 0:
        _drain_pilots(ctx, req.name, False)
    return _view(manager)


async def cluster_drain(ctx: Context, req: c.ClusterDrain, user: str) -> c.ClusterView:
    manager = _pilots(ctx).manager(req.name)
    manager.drain()
    _drain_pilots(ctx, req.name, True)
    return _view(manager)


async def cluster_retry(ctx: Context, req: c.ClusterRetry, user: str) -> c.ClusterView:
    manager = _pilots(ctx).manager(req.name)
    manager.retry()
    return _view(manager)
