"""`nvq node status NAME` and `nvq node restart NAME`: a node's runner as the daemon
knows it, and restarting it.

A restart stops the runner process only (its jobs are not its process group and run
on), then lets the node's link connect again at once; `attach` starts a fresh runner,
which adopts the running jobs by pid and start time as after any runner restart. The
reply is the new runner's status, once it has said hello and been reconciled."""

from __future__ import annotations

import time

import anyio

from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import RequestError
from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.runner_stop import stop_runner
from nvq.daemon.state import State

RESTART_WAIT = 60.0  # for the new runner's hello and reconciliation


def runner_status(state: State, node: NodeRuntime) -> c.RunnerStatus:
    hello = node.hello
    started = hello.started_at if hello is not None and hello.started_at else None
    up = node.state == "up" and hello is not None and not node.ignored
    return c.RunnerStatus(
        node=node.name,
        state=node.shown_state,
        runner_up=up,
        pid=hello.pid if hello is not None else None,
        version=hello.runner_version if hello is not None else None,
        hostname=hello.hostname if hello is not None else None,
        started_at=started,
        uptime_s=round(time.time() - started, 1) if up and started is not None else None,
        jobs=sorted(j.id for j in state.jobs_on(node.name)),
        journal_id=node.journal_id,
        journal_head=hello.journal_head if hello is not None else None,
        applied_seq=node.applied_seq,
        last_seen=node.last_seen,
        last_error=node.error,
    )


async def node_status(ctx: Context, req: c.NodeStatus, user: str) -> c.RunnerStatus:
    return runner_status(ctx.state, ctx.state.find_node(req.node))


async def node_restart(ctx: Context, req: c.NodeRestart, user: str) -> c.RunnerStatus:
    state = ctx.state
    node = state.find_node(req.node)
    if node.ignored:
        raise RequestError(
            f"node {node.name} is {node.shown_state}: its runner is not kept running "
            f"(`nvq node start {node.name}` or `nvq queue unignore {node.name}`)"
        )
    old = node.hello.pid if node.hello is not None else None
    try:
        await stop_runner(state.config, state.home, node)
    except Exception as exc:
        raise RequestError(f"node {node.name}: the runner could not be stopped: {exc}") from None
    if node.link_scope is not None:
        node.link_scope.cancel()  # reconnect now: the link starts a fresh runner
    with anyio.move_on_after(RESTART_WAIT):
        while not _back(node, old):
            changed = state.changed
            with anyio.move_on_after(0.5):
                await changed.wait()
    if not _back(node, old):
        raise RequestError(
            f"node {node.name}: the runner was stopped but no new one reported within "
            f"{RESTART_WAIT:g}s ({node.error or node.shown_state}); its jobs run on"
        )
    return runner_status(state, node)


def _back(node: NodeRuntime, old_pid: int | None) -> bool:
    hello = node.hello
    return (
        node.state == "up" and node.reconciled and hello is not None and hello.pid != old_pid
    )
