"""`apply_journaled`: the one way a runner's journaled events (starts, setup phases,
exits, losses, failed launches, fencings, early signals) change the queue, each
exactly once.

One read of a node's link may deliver many events. Those whose decision needs nothing
but memory (a start or an exit of a job held in memory, on its current attempt and
this node, no kill owed, the job running, the node reconciled and not replaying)
commit together: one
transaction for a burst instead of one each. Any other event first commits what came
before it, then is decided and committed alone (it may read the database, and its
decision must see the ones before it). Every commit carries the node's journal seq, so
a replayed event is recognised and only acknowledged again; acks, kills, the last
artifact syncs and the placement pass follow each commit as `Effects`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from nvq.daemon.core import store_behind
from nvq.daemon.core.apply import record
from nvq.daemon.core.effects import Effects, Ended
from nvq.daemon.core.held import Held, locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.setup_phase import applied
from nvq.daemon.core.signalled import event_of
from nvq.daemon.core.state import State
from nvq.domain import exits, fencing, gpu_oom, transitions
from nvq.model import Event, JobRecord, NodeSeq, Outcome, Tx
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

Reconcile = Callable[[Held, NodeRuntime], Awaitable[None]]


class _Batch:
    """Events applied together: their rows, their effects, and the jobs as the
    earlier events of the batch left them."""

    def __init__(self, node: NodeRuntime) -> None:
        self.node = node
        self.tx = Tx()
        self.fx = Effects()
        self.seen: dict[int, JobRecord] = {}
        self.last_seq = node.applied_seq  # the newest event applied, here or before
        self.acked = 0  # the newest event to acknowledge

    def take(self, ev: p.JournaledEvent, outcome: Outcome, job: JobRecord | None = None) -> None:
        """Add what `ev` decided (`job`: its job as it stood before) to the batch."""
        if outcome.job is not None:
            self.seen[ev.job_id] = outcome.job
        record(self.tx, outcome)
        self.last_seq = self.acked = ev.seq
        if isinstance(ev, p.JobStarted | p.JobSignalled | p.SetupPhase):
            return
        self.fx.kick = True  # an attempt's end may let others start
        if isinstance(ev, p.AttemptFenced):
            return  # stopped by its runner: no kill owed, nothing left to sync
        if outcome.reap is not None:
            self.fx.kills.append(outcome.reap)
        # Its last artifacts are fetched before the job may run again.
        kept = ev.artifacts if isinstance(ev, p.JobExited) else True
        ended = outcome.job if outcome.job is not None else job
        self.fx.ended.append(Ended(self.node, ended, ev.attempt, kept))


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
        batch = _Batch(node)
        for ev in evs:
            if ev.seq <= batch.last_seq:
                batch.acked = max(batch.acked, ev.seq)  # applied before: ack it again
                continue
            job = None if replaying else _plain(state, batch, ev)
            if job is not None:
                batch.take(ev, _decide_plain(job, ev, node.name), job)
                continue
            await _flush(held, batch, reconcile)
            batch = _Batch(node)
            await _decide(held, batch, ev)
            await _flush(held, batch, reconcile)
            batch = _Batch(node)
        await _flush(held, batch, reconcile)


def _plain(state: State, batch: _Batch, ev: p.JournaledEvent) -> JobRecord | None:
    """The job `ev` is about, when its decision needs nothing but memory."""
    node = batch.node
    if not node.reconciled or node.send is None:
        return None
    if not isinstance(ev, p.JobStarted | p.JobExited):
        return None
    job = batch.seen.get(ev.job_id) or state.jobs.get(ev.job_id)
    if (
        job is None
        or ev.attempt != job.attempt
        or (ev.job_id, ev.attempt) in state.reaps
        or job.node != node.name
        or (isinstance(ev, p.JobExited) and exits.in_question(job, False, ev, node.name))
    ):
        return None
    return job


def _decide_plain(job: JobRecord, ev: p.JournaledEvent, node: str) -> Outcome:
    if isinstance(ev, p.JobStarted):
        return transitions.started(job, ev, node)
    assert isinstance(ev, p.JobExited)
    # Not in question (see `_plain`): the job's events are not needed.
    return exits.decide(job, [], ev, node, owed=False)


async def _flush(held: Held, batch: _Batch, reconcile: Reconcile) -> None:
    """Commit what `batch` decided, with the node's seq; then, once the runner's replay
    is over, make it and the database agree."""
    node = batch.node
    fresh = batch.last_seq > node.applied_seq
    if fresh:
        batch.tx.node_seq = NodeSeq(node.name, node.journal_id, batch.last_seq)
    if batch.acked:
        batch.fx.acks.append((node, batch.acked))
    await held.commit(batch.tx, batch.fx)
    if fresh and not node.reconciled and batch.last_seq >= node.replay_until:
        await reconcile(held, node)


async def _decide(held: Held, batch: _Batch, ev: p.JournaledEvent) -> None:
    """Decide one event that may need the database."""
    state = held.state
    node = batch.node
    tx = batch.tx
    key = (ev.job_id, ev.attempt)
    if isinstance(ev, p.AttemptFenced):
        _fenced(state, batch, ev)
        return
    if isinstance(ev, p.JobSignalled):
        live = state.jobs.get(ev.job_id)
        if live is not None and live.attempt == ev.attempt:
            tx.events = [event_of(ev, node.name)]
        batch.take(ev, Outcome())
        return
    if isinstance(ev, p.SetupPhase):
        live = state.jobs.get(ev.job_id)
        new, event = applied(live, ev, node.name) if live is not None else (None, None)
        batch.take(ev, Outcome(new, [event]) if new is not None and event is not None
                   else Outcome())
        return
    job = state.jobs.get(ev.job_id) or state.reaping.get(key)
    if job is None:
        job = await state.store.job(ev.job_id)
    outcome = Outcome()
    if await _unknown(state, job, ev):
        alert = store_behind.event_alert(node.name, node.journal_id, ev)
        log.error("%s", alert.message)
        if not isinstance(ev, p.JobStarted):
            tx.alerts = [alert]  # once per attempt, saying how it ended
        state.store_behind.setdefault(node.name, set()).add(ev.job_id)
        await state.store.raise_last_id(ev.job_id)
        job = None
    elif job is not None:
        if isinstance(ev, p.JobStarted):
            outcome = transitions.started(job, ev, node.name)
        elif isinstance(ev, p.JobExited):
            outcome = await _exited(held, node, job, ev)
        elif isinstance(ev, p.JobLost):
            outcome = transitions.lost(job, ev, node.name)
        elif isinstance(ev, p.LaunchFailed):
            outcome = transitions.launch_failed(job, ev, node.name)
    batch.take(ev, outcome, job)
    if not isinstance(ev, p.JobStarted) and key in state.reaps:
        tx.drop_reaps.append(key)


def _fenced(state: State, batch: _Batch, ev: p.AttemptFenced) -> None:
    """The runner stopped an attempt itself: its lease from this daemon lapsed
    (`nvq.domain.fencing`). Its old attempt needs no kill: it is stopped."""
    node = batch.node
    key = (ev.job_id, ev.attempt)
    job = state.jobs.get(ev.job_id) or state.reaping.get(key)
    if job is not None:
        requeued = fencing.record_fenced(
            batch.tx, fencing.fenced(job, ev, node.name, state.reaps.get(key)))
        log.warning(
            "node %s: job %s attempt %s was stopped by its runner, which heard "
            "nothing from the daemon for %.1fs (lease %gs)%s",
            node.name, ev.job_id, ev.attempt, ev.silent_for, ev.lease,
            "; the job goes back to the queue" if requeued else "",
        )
    batch.take(ev, Outcome())


async def _unknown(state: State, job: JobRecord | None, ev: p.JournaledEvent) -> bool:
    """True when queue.db never dispatched this attempt: it has no such job and
    never had (a purged job keeps its events), or its job has not reached that
    attempt (a job that took the id after a restore)."""
    if job is not None:
        return ev.attempt > job.attempt
    return not await state.store.events(job_id=ev.job_id, limit=1)


async def _exited(held: Held, node: NodeRuntime, job: JobRecord, ev: p.JobExited) -> Outcome:
    """What an attempt's exit does to its job, including an attempt the job was
    taken from while its node was away, whichever of its attempts' exits came
    first (`nvq.domain.exits`)."""
    state = held.state
    live = state.jobs.get(ev.job_id)
    current = live if live is not None else await state.store.job(ev.job_id)
    if current is None:
        return transitions.exited(job, ev, node.name)
    owed = (ev.job_id, ev.attempt) in state.reaps
    events: list[Event] = []
    if exits.in_question(current, owed, ev, node.name):
        events = await state.store.events(job_id=ev.job_id)
    # A job settled and gone from memory: as its attempt's kill left it.
    settled = job if live is None else None
    cards = {n.name: [(g.index, g.total_mb) for g in n.hello.gpus]
             for n in state.nodes.values() if n.hello}
    cap = gpu_oom.vram_cap(cards, current.spec, state.config.queue.headroom_mb)
    outcome = exits.decide(
        current, events, ev, node.name, owed=owed, settled=settled, vram_cap_mb=cap
    )
    for e in outcome.events:
        if e.kind == "attempt_superseded":
            log.warning("job %s: attempt %s is superseded: %s",
                        ev.job_id, e.data["attempt"], e.data["reason"])
    return outcome
