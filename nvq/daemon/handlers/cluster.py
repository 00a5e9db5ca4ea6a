"""Requests about Slurm clusters: their pilots, and a person's say in how many."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from nvq import control as c
from nvq.config import ConfigError, load_config
from nvq.config.changes import cluster_retry as retry_plan
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.held import locked
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import ANYONE, admin

log = logging.getLogger("nvq.clusters")

if TYPE_CHECKING:
    from nvq.daemon.machines.pilots import DaemonPilots


def _pilots(ctx: Context) -> DaemonPilots:
    if ctx.machines.pilots is None:
        raise RequestError("no [[clusters]] in config.toml")
    # Here, not at the top: pilots bring asyncssh, which a daemon without [[clusters]]
    # or SSH nodes never loads (daemon/main.py starts them the same way).
    from nvq.daemon.machines.pilots import DaemonPilots

    if not isinstance(ctx.machines.pilots, DaemonPilots):
        raise RequestError("no [[clusters]] in config.toml")
    return ctx.machines.pilots


FRESH_WAIT = 10.0  # at most this long for a fresh squeue before the last one is shown


@handles(c.ClusterStatus, may=ANYONE)
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


@handles(c.ClusterScale, may=admin("scale a cluster"))
async def cluster_scale(ctx: Context, req: c.ClusterScale, user: str) -> c.ClusterView:
    if req.pilots is not None and req.pilots < 0:
        raise RequestError(f"cannot keep {req.pilots} pilots")
    manager = _pilots(ctx).manager(req.name)
    manager.scale(req.pilots)
    if req.pilots != 0:
        _drain_pilots(ctx, req.name, False)
    return _view(manager)


@handles(c.ClusterDrain, may=admin("drain a cluster"))
async def cluster_drain(ctx: Context, req: c.ClusterDrain, user: str) -> c.ClusterView:
    manager = _pilots(ctx).manager(req.name)
    manager.drain()
    _drain_pilots(ctx, req.name, True)
    return _view(manager)


@handles(c.ClusterRetry, may=admin("retry a cluster"))
async def cluster_retry(ctx: Context, req: c.ClusterRetry, user: str) -> c.ClusterRetried:
    """Lift the block, with the cluster's table as config.toml has it now: a retry
    after fixing the config must not ask Slurm again with the config it refused."""
    pilots = _pilots(ctx)
    manager = pilots.manager(req.name)
    state = ctx.state
    try:
        new = load_config(state.home)
    except ConfigError as exc:
        raise RequestError(f"not retried, config.toml does not load: {exc}") from None
    async with locked(state):
        cluster, line = retry_plan(state.config, new, req.name)
        if cluster is not None:
            clusters = [cluster if k.name == req.name else k for k in state.config.clusters]
            config = msgspec.structs.replace(state.config, clusters=clusters)
            state.config = ctx.ops.config = ctx.ops.notifier.config = config
            state.usage.config = config
            pilots.reconfigure([cluster])
        else:
            manager.retry()
    log.info("cluster retry: %s", line)
    view = manager.view()
    return msgspec.convert({**view, "applied": line}, c.ClusterRetried)
