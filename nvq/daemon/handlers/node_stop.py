"""`nvq node stop NAME|--all [--kill-jobs]` (`nvq node start NAME` un-ignores the node).

The daemon keeps a link to every node and `attach` starts a runner that is not
running, so a stopped runner would be back within a second. Stopping a node
therefore also ignores it (persisted, like `queue ignore`: no link at all, no
placements) until `node start` (`NodeFlag` ignored=False, as `queue unignore`)
un-ignores it; the link then starts the runner again. A node with running jobs is left alone: stopping its runner
would not stop them, and the queue would lose sight of them. With `--kill-jobs` they
are cancelled first and the runner is stopped once their processes are gone."""

from __future__ import annotations

import logging
import time

import anyio

from nvq import control as c
from nvq.daemon.apply import apply
from nvq.daemon.context import Context
from nvq.daemon.errors import BadRequest, RequestError
from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.runner_stop import stop_runner
from nvq.daemon.state import State
from nvq.domain import transitions
from nvq.model import NewEvent, Tx

log = logging.getLogger("nvq.nodes")


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
    async with state.lock:
        running = state.jobs_on(node.name)
        if running and not kill_jobs:
            ids = ", ".join(str(j.id) for j in running)
            return f"{len(running)} running jobs ({ids}); --kill-jobs cancels them first"
        if running:
            now = time.time()
            await apply(
                state,
                running,
                lambda j: transitions.cancel(j, now=now, by=user),
                by=user,
                action="cancel",
            )
    grace = state.config.queue.kill_grace + 15.0
    if not await _until_reaped(state, node.name, grace):
        return f"its jobs' processes were not confirmed gone within {grace:g}s"
    async with state.lock:
        node.ignored = node.stopped = True
        await state.store.save_node(node.name, ignored=True)
        await state.commit(Tx(events=[NewEvent("node_stopped", None, node.name, {"by": user})]))
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

