"""A runner sent a job its `--signal` ahead of its timeout (`JobSignalled`, journaled):
recorded as the event `job_signalled`, applied exactly once as every journaled event
is (the node's seq commits with it)."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.state import State
from nvq.model import NewEvent, NodeSeq, Tx
from nvq_runner import protocol as p

KIND = "job_signalled"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def event_of(ev: p.JobSignalled, node: str) -> NewEvent:
    return NewEvent(KIND, ev.job_id, node, {
        "attempt": ev.attempt, "signal": signal_name(ev.signal), "end_at": ev.end_at,
        "why": "timeout",
    })


async def on_signalled(
    state: State, node: NodeRuntime, ev: p.JobSignalled,
    reconcile: Callable[[NodeRuntime], Awaitable[None]],
) -> None:
    async with state.lock:
        if ev.seq <= node.applied_seq:
            node.post(p.Ack(ev.seq))
            return
        tx = Tx(node_seq=NodeSeq(node.name, node.journal_id, ev.seq))
        job = state.jobs.get(ev.job_id)
        if job is not None and job.attempt == ev.attempt:
            tx.events = [event_of(ev, node.name)]
        await state.commit(tx)
        node.applied_seq = ev.seq
        node.post(p.Ack(ev.seq))
        if not node.reconciled and ev.seq >= node.replay_until:
            await reconcile(node)
