"""`apply_journaled`: the one way a runner's journaled events (starts, setup phases,
exits, losses, failed launches, fencings, early signals) change the queue, each
exactly once. This is the I/O shell; what each event does is decided in memory by
`journal_batch` (`decide_batch`).

One read of a node's link may deliver many events. Those whose decision needs nothing
but memory (a start or an exit of a job held in memory, on its current attempt and
this node, no kill owed, the job running, the node reconciled and not replaying)
commit together: one transaction for a burst instead of one each. Any other event
first commits what came before it, then has what it needs read from the database
(`Fetched`), is decided and committed alone (its decision must see the ones before
it). Every commit carries the node's journal seq, so a replayed event is recognised
and only acknowledged again; acks, kills, the last artifact syncs and the placement
pass follow each commit as `Effects`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from nvq.daemon.core import store_behind
from nvq.daemon.core.held import Held, locked
from nvq.daemon.core.journal_batch import NOTHING, Batch, Fetched, unknown
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.domain import exits
from nvq.model import Event, JobRecord
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

Reconcile = Callable[[Held, NodeRuntime], Awaitable[None]]


async def apply_journaled(
    state: State,
    node: NodeRuntime,
    evs: Sequence[p.JournaledEvent],
    *,
    replaying: bool,
    reconcile: Reconcile,
) -> None:
    """Apply `evs` (in the order the runner journaled them). Takes the lock."""
    async with locked(state) as held:
        batch = _batch(state, node)
        for ev in evs:
            if batch.replayed(ev) or (not replaying and batch.plain(ev)):
                batch.decide(ev)
                continue
            await _flush(held, batch, reconcile)
            batch = _batch(state, node)
            batch.decide(ev, await _fetch(state, node, ev))
            await _store_behind(state, batch)
            await _flush(held, batch, reconcile)
            batch = _batch(state, node)
        await _flush(held, batch, reconcile)


def _batch(state: State, node: NodeRuntime) -> Batch:
    cards = {n.name: [(g.index, g.total_mb) for g in n.hello.gpus]
             for n in state.nodes.values() if n.hello}
    return Batch(state.jobs, state.reaps, state.reaping, node, cards=cards,
                 headroom_mb=state.config.queue.headroom_mb)


async def _flush(held: Held, batch: Batch, reconcile: Reconcile) -> None:
    """Commit what `batch` decided, with the node's seq; then, once the runner's replay
    is over, make it and the database agree."""
    node = batch.node
    fresh = batch.last_seq > node.applied_seq
    await held.commit(*batch.result())
    if fresh and not node.reconciled and batch.last_seq >= node.replay_until:
        await reconcile(held, node)


async def _fetch(state: State, node: NodeRuntime, ev: p.JournaledEvent) -> Fetched:
    """What deciding `ev` alone needs of the database: its job's row when memory does
    not hold it, whether an id with no row was ever dispatched, and the events of a
    job whose exit is in question."""
    if not isinstance(ev, p.JobStarted | p.JobExited | p.JobLost | p.LaunchFailed):
        return NOTHING
    key = (ev.job_id, ev.attempt)
    live = state.jobs.get(ev.job_id)
    stored: dict[int, JobRecord | None] = {}
    if live is None and (key not in state.reaping or isinstance(ev, p.JobExited)):
        stored[ev.job_id] = await state.store.job(ev.job_id)
    job = live or state.reaping.get(key) or stored.get(ev.job_id)
    dispatched: frozenset[int] = frozenset()
    if job is None and await state.store.events(job_id=ev.job_id, limit=1):
        dispatched = frozenset({ev.job_id})
    events: dict[int, list[Event]] = {}
    fetched = Fetched(stored, dispatched)
    if isinstance(ev, p.JobExited) and job is not None and not unknown(job, ev, fetched):
        current = live if live is not None else stored.get(ev.job_id)
        owed = key in state.reaps
        if current is not None and exits.in_question(current, owed, ev, node.name):
            events[ev.job_id] = await state.store.events(job_id=ev.job_id)
    return Fetched(stored, dispatched, events)


async def _store_behind(state: State, batch: Batch) -> None:
    """Events about attempts queue.db never dispatched: it lost them (a restored or
    damaged store). Their ids are kept for `queue check`, and never given again."""
    node = batch.node
    for ev in batch.unknown:
        log.error("%s", store_behind.event_alert(node.name, node.journal_id, ev).message)
        state.store_behind.missing.setdefault(node.name, set()).add(ev.job_id)
        await state.store.raise_last_id(ev.job_id)
