"""`nvq queue alerts|ack|backup|check`: operating the queue. The check is queue.db's
own integrity, and whether it knows every job the nodes' journals know (a restored
backup or a damaged WAL loses records silently otherwise)."""

from __future__ import annotations

import anyio
import msgspec

from nvq import control as c
from nvq.daemon.core.errors import RequestError, map_exceptions
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.domain.permissions import ANYONE, admin


@handles(c.Alerts, may=ANYONE)
async def alerts(ctx: Context, req: c.Alerts, user: str) -> c.Coded[list[c.Alert]]:
    shown = await ctx.ops.alerts(req.include_acked)
    # Non-zero while anything is unacknowledged: a cheap health check.
    return c.Coded(shown, 1 if any(a.acked_at is None for a in shown) else 0)


@handles(c.Ack, may=admin("acknowledge alerts"))
async def ack(ctx: Context, req: c.Ack, user: str) -> list[c.Alert]:
    # An unknown alert id: the alerts table's ack names it before changing anything.
    with map_exceptions({LookupError: RequestError}):
        return await ctx.ops.ack(req.ids, by=user)


@handles(c.Backup, may=admin("back up the queue"))
async def backup(ctx: Context, req: c.Backup, user: str) -> c.BackupMade:
    return msgspec.convert(await ctx.ops.backup(req.path), c.BackupMade)


def _settled(node: NodeRuntime) -> bool:
    """Compared already, or not to be compared now (down, ignored)."""
    return node.reconciled or node.ignored or node.state == "down"


async def _wait_for_nodes(state: State, seconds: float) -> None:
    """Nodes still connecting (a daemon that has just started) report first."""
    with anyio.move_on_after(seconds):
        while not all(_settled(n) for n in state.nodes.values()):
            changed = state.changed
            with anyio.move_on_after(0.2):  # a reconnect may not change any job
                await changed.wait()


def _node_check(state: State, node: NodeRuntime) -> c.NodeCheck:
    head = node.hello.journal_head if node.hello is not None and node.reconciled else None
    lost = max(0, head - node.applied_seq) if head is not None else 0
    return c.NodeCheck(
        missing=sorted(state.store_behind.missing.get(node.name, ())),
        state=node.shown_state,
        journal_head=head,
        applied_seq=node.applied_seq,
        lost_events=lost,
        recovered=sorted(state.store_behind.recovered.get(node.name, ())),
    )


@handles(c.Check, may=admin("check the queue's store"))
async def check(ctx: Context, req: c.Check, user: str) -> c.Coded[c.StoreCheck]:
    state = ctx.state
    await _wait_for_nodes(state, max(0.0, min(req.wait, 60.0)))
    report = c.StoreCheck(
        integrity=await state.store.integrity(),
        nodes={name: _node_check(state, node) for name, node in state.nodes.items()},
    )
    wrong = report.integrity != "ok" or any(
        n.missing or n.lost_events for n in report.nodes.values()
    )
    return c.Coded(report, 1 if wrong else 0)
