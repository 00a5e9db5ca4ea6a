"""`nvq node bootstrap|stop|status|restart` (`node start` is a `NodeFlag`, `node add`
and `node health` need no request of their own).

Stop (`--all`, `--kill-jobs`): the daemon keeps a link to every node and `attach`
starts a runner that is not running, so a stopped runner would be back within a
second. Stopping a node therefore also ignores it (persisted, like `queue ignore`: no
link at all, no placements) until `node start` (`NodeFlag` ignored=False, as `queue
unignore`) un-ignores it; the link then starts the runner again. A node with running
jobs is left alone: stopping its runner would not stop them, and the queue would lose
sight of them. With `--kill-jobs` they are cancelled first and the runner is stopped
once their processes are gone.

Status and restart: a node's runner as the daemon knows it. A restart stops the
runner process only (its jobs are not its process group and run on), then lets the
node's link connect again at once; `attach` starts a fresh runner, which adopts the
running jobs by pid and start time as after any runner restart. The reply is the new
runner's status, once it has said hello and been reconciled."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import msgspec

from nvq import control as c
from nvq.daemon.core.apply import apply
from nvq.daemon.core.errors import BadRequest, RequestError, map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.machines.runner_stop import stop_runner
from nvq.domain import transitions
from nvq.domain.permissions import ANYONE, admin
from nvq.model import NewEvent, Tx

RESTART_WAIT = 60.0  # for the new runner's hello and reconciliation

log = logging.getLogger("nvq.nodes")


@handles(c.NodeStop, may=admin("stop a node's runner"))
async def node_stop(ctx: Context, req: c.NodeStop, user: str) -> c.NodesStopped:
    state = ctx.state
    if (req.node is None) == (not req.all):
        raise BadRequest("give a node name or --all, not both")
    if req.all:
        nodes = [n for n in state.nodes.values() if not n.ignored]
    else:
        assert req.node is not None
        nodes = [state.find_node(req.node)]
        if nodes[0].ignored:
            raise RequestError(f"node {nodes[0].name} is {nodes[0].shown_state} already")
    done = c.NodesStopped(stopped=[], left=[])
    for node in nodes:
        left = await _stop_one(ctx, node, req.kill_jobs, user)
        if left is None:
            done.stopped.append(node.name)
        elif not req.all:
            raise RequestError(f"node {node.name}: {left}")
        else:
            done.left.append(c.NodeLeft(node=node.name, reason=left))
    return done


async def _stop_one(ctx: Context, node: NodeRuntime, kill_jobs: bool, user: str) -> str | None:
    """Stop `node`'s runner; None when done, else why it was left running."""
    state = ctx.state
    async with locked(state) as held:
        running = state.jobs_on(node.name)
        if running and not kill_jobs:
            ids = ", ".join(str(j.id) for j in running)
            return f"{len(running)} running jobs ({ids}); --kill-jobs cancels them first"
        if running:
            now = time.time()
            await apply(
                held,
                running,
                lambda j: transitions.cancel(j, now=now, by=user),
                by=user,
                action="cancel",
            )
    grace = state.config.queue.kill_grace + 15.0
    if not await _until_reaped(state, node.name, grace):
        return f"its jobs' processes were not confirmed gone within {grace:g}s"
    async with locked(state) as held:
        node.ignored = node.stopped = True
        await state.store.save_node(node.name, ignored=True)
        await held.commit(Tx(events=[NewEvent("node_stopped", None, node.name, {"by": user})]))
        if node.link_scope is not None:
            node.link_scope.cancel()
        state.notify()
    try:
        await stop_runner(state.config, state.home, node)
    except Exception as exc:
        log.warning("node %s: %s", node.name, exc)
        return f"the runner could not be stopped: {exc}"
    return None


async def _until_reaped(state: State, node: str, timeout: float) -> bool:
    """Wait until no kill is owed to `node` (its cancelled jobs' processes exited)."""
    with anyio.move_on_after(timeout):
        while any(r.node == node for r in state.reaps.values()):
            changed = state.changed
            with anyio.move_on_after(0.5):
                await changed.wait()
        return True
    return False


@handles(c.Bootstrap, may=admin("bootstrap a node"))
async def bootstrap(ctx: Context, req: c.Bootstrap, user: str) -> c.Bootstrapped:
    """Install (or refresh) the runner on an SSH node, then reconnect to it."""
    # asyncssh is only loaded when a node is bootstrapped.
    from nvq.daemon.ssh import NodeUnreachable
    from nvq.daemon.ssh.opener import connect, install_runner, managed

    node = ctx.state.find_node(req.node)
    if node.config is None:
        raise RequestError(
            f"{node.name} is the local node: its runner comes from this installation"
        )
    with map_exceptions({NodeUnreachable: RequestError}):
        conn = await connect(node.config, ctx.state.config.queue)
        try:
            result = await install_runner(conn, node.config, force=req.force)
        finally:
            conn.close()
    if result.installed and node.link_scope is not None:
        node.link_scope.cancel()  # reconnect: attach starts the new runner
    doc: dict[str, Any] = {
        "node": node.name,
        "version": result.version,
        "python": result.python,
        "installed": result.installed,
        "seconds": round(result.seconds, 3),
    }
    if not managed(node.config):
        doc["note"] = (
            f"nodes.python is set to {node.config.python}: the daemon runs the runner "
            "with it, not with the installed venv"
        )
    return msgspec.convert(doc, c.Bootstrapped)


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


@handles(c.NodeStatus, may=ANYONE)
async def node_status(ctx: Context, req: c.NodeStatus, user: str) -> c.RunnerStatus:
    return runner_status(ctx.state, ctx.state.find_node(req.node))


@handles(c.NodeRestart, may=admin("restart a node's runner"))
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
