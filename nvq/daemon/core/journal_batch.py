"""The decide step of a runner's journaled events, pure: `decide_batch(jobs, reaps, node,
evs, fetched) -> (Tx, Effects)` says what a run of events does to the queue and what
the commit owes once durable, from memory and from what the database said before
(`Fetched`), with no I/O. `apply_journaled` (journaled.py) is its shell: it takes the
lock, chooses which events commit together, reads what an event needs and commits.
Tested in memory as distributed tests `handle_stimulus` (tests/daemon/test_decide_batch.py).

A replayed event (its seq applied before) is only acknowledged again. Every other one
is decided against the job as the earlier events of the batch left it, else as memory
holds it, else as `fetched` read it; an event about an attempt queue.db never
dispatched raises the store-behind alert instead."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nvq.daemon.core import store_behind
from nvq.daemon.core.apply import record
from nvq.daemon.core.effects import Effects, Ended
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.setup_phase import applied
from nvq.daemon.core.signalled import event_of
from nvq.domain import exits, fencing, gpu_oom, transitions
from nvq.model import Event, JobRecord, NodeSeq, Outcome, Reap, Tx
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

Key = tuple[int, int]  # (job id, attempt)


@dataclass(frozen=True, slots=True)
class Fetched:
    """What the database said about the events of a batch, read before deciding."""

    # Rows of jobs memory does not hold (None: queue.db has no such job).
    stored: Mapping[int, JobRecord | None] = field(default_factory=dict)
    # Ids with no row that queue.db once dispatched (a purged job keeps its events).
    dispatched: frozenset[int] = frozenset()
    # An exit in question (`exits.in_question`): all its job's events.
    events: Mapping[int, Sequence[Event]] = field(default_factory=dict)


NOTHING = Fetched()


def decide_batch(
    jobs: Mapping[int, JobRecord],
    reaps: Mapping[Key, Reap],
    node: NodeRuntime,
    evs: Sequence[p.JournaledEvent],
    fetched: Fetched = NOTHING,
    *,
    reaping: Mapping[Key, JobRecord] | None = None,
    cards: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    headroom_mb: int = 0,
) -> tuple[Tx, Effects]:
    """What `evs` (in journal order) do, as one commit: its rows, stamped with the
    node's newest seq, and what it owes (acks, kills, last syncs, a placement pass).
    `reaping`: settled jobs whose attempt still awaits its kill; `cards` and
    `headroom_mb`: every node's cards (index, MiB) and the queue's headroom, which cap
    a retry's larger `--vram` after a GPU out-of-memory (`nvq.domain.gpu_oom`)."""
    batch = Batch(jobs, reaps, reaping or {}, node, cards=cards or {}, headroom_mb=headroom_mb)
    for ev in evs:
        batch.decide(ev, fetched)
    return batch.result()


class Batch:
    """Events decided together: their rows, their effects, and the jobs as the
    earlier events of the batch left them."""

    def __init__(
        self,
        jobs: Mapping[int, JobRecord],
        reaps: Mapping[Key, Reap],
        reaping: Mapping[Key, JobRecord],
        node: NodeRuntime,
        *,
        cards: Mapping[str, Sequence[tuple[int, int]]] | None = None,
        headroom_mb: int = 0,
    ) -> None:
        self.jobs = jobs
        self.cards = cards or {}
        self.headroom_mb = headroom_mb
        self.reaps = reaps
        self.reaping = reaping
        self.node = node
        self.tx = Tx()
        self.fx = Effects()
        self.seen: dict[int, JobRecord] = {}
        self.last_seq = node.applied_seq  # the newest event applied, here or before
        self.acked = 0  # the newest event to acknowledge
        self.unknown: list[p.JournaledEvent] = []  # about attempts queue.db never dispatched

    def replayed(self, ev: p.JournaledEvent) -> bool:
        return ev.seq <= self.last_seq

    def plain(self, ev: p.JournaledEvent) -> bool:
        """Whether `ev` is decided from memory alone, so it may share a commit with
        the events before it: a start or an exit of a job held in memory, on its
        current attempt and this node, no kill owed, an exit of the job running, the
        node reconciled and connected."""
        node = self.node
        if not node.reconciled or node.send is None:
            return False
        if not isinstance(ev, p.JobStarted | p.JobExited):
            return False
        job = self._live(ev.job_id)
        return not (
            job is None
            or ev.attempt != job.attempt
            or (ev.job_id, ev.attempt) in self.reaps
            or job.node != node.name
            or (isinstance(ev, p.JobExited) and exits.in_question(job, False, ev, node.name))
        )

    def decide(self, ev: p.JournaledEvent, fetched: Fetched = NOTHING) -> None:
        """Add what `ev` does to the batch (a replay: only its ack)."""
        if self.replayed(ev):
            self.acked = max(self.acked, ev.seq)  # applied before: ack it again
            return
        if isinstance(ev, p.AttemptFenced):
            self._fenced(ev)
        elif isinstance(ev, p.JobSignalled):
            live = self._live(ev.job_id)
            if live is not None and live.attempt == ev.attempt:
                self.tx.events = [event_of(ev, self.node.name)]
            self._take(ev, Outcome())
        elif isinstance(ev, p.SetupPhase):
            live = self._live(ev.job_id)
            new, event = applied(live, ev, self.node.name) if live is not None else (None, None)
            self._take(ev, Outcome(new, [event]) if new is not None and event is not None
                       else Outcome())
        else:
            self._attempt(ev, fetched)

    def result(self) -> tuple[Tx, Effects]:
        """The commit: its rows with the node's newest seq (when it moved), and its
        effects with the ack."""
        node = self.node
        if self.last_seq > node.applied_seq:
            self.tx.node_seq = NodeSeq(node.name, node.journal_id, self.last_seq)
        if self.acked:
            self.fx.acks.append((node, self.acked))
        return self.tx, self.fx

    def _live(self, job_id: int) -> JobRecord | None:
        return self.seen.get(job_id) or self.jobs.get(job_id)

    def _attempt(
        self, ev: p.JobStarted | p.JobExited | p.JobLost | p.LaunchFailed, fetched: Fetched
    ) -> None:
        name = self.node.name
        key = (ev.job_id, ev.attempt)
        job = self._live(ev.job_id) or self.reaping.get(key) or fetched.stored.get(ev.job_id)
        outcome = Outcome()
        if unknown(job, ev, fetched):
            self.unknown.append(ev)
            if not isinstance(ev, p.JobStarted):  # once per attempt, saying how it ended
                self.tx.alerts = [store_behind.event_alert(name, self.node.journal_id, ev)]
            job = None
        elif job is not None:
            if isinstance(ev, p.JobStarted):
                outcome = transitions.started(job, ev, name)
            elif isinstance(ev, p.JobExited):
                outcome = self._exited(job, ev, fetched)
            elif isinstance(ev, p.JobLost):
                outcome = transitions.lost(job, ev, name)
            else:
                outcome = transitions.launch_failed(job, ev, name)
        self._take(ev, outcome, job)
        if not isinstance(ev, p.JobStarted) and key in self.reaps:
            self.tx.drop_reaps.append(key)

    def _exited(self, job: JobRecord, ev: p.JobExited, fetched: Fetched) -> Outcome:
        """What an attempt's exit does to its job, including an attempt the job was
        taken from while its node was away, whichever of its attempts' exits came
        first (`nvq.domain.exits`)."""
        name = self.node.name
        live = self._live(ev.job_id)
        current = live if live is not None else fetched.stored.get(ev.job_id)
        if current is None:
            return transitions.exited(job, ev, name)
        owed = (ev.job_id, ev.attempt) in self.reaps
        # An exit in question is decided with its job's events (the shell reads them).
        events = fetched.events[ev.job_id] if exits.in_question(current, owed, ev, name) else []
        # A job settled and gone from memory: as its attempt's kill left it.
        settled = job if live is None else None
        cap = gpu_oom.vram_cap(self.cards, current.spec, self.headroom_mb)
        outcome = exits.decide(
            current, events, ev, name, owed=owed, settled=settled, vram_cap_mb=cap
        )
        for e in outcome.events:
            if e.kind == "attempt_superseded":
                log.warning("job %s: attempt %s is superseded: %s",
                            ev.job_id, e.data["attempt"], e.data["reason"])
        return outcome

    def _fenced(self, ev: p.AttemptFenced) -> None:
        """The runner stopped an attempt itself: its lease from this daemon lapsed
        (`nvq.domain.fencing`). Its old attempt needs no kill: it is stopped."""
        node = self.node
        key = (ev.job_id, ev.attempt)
        job = self._live(ev.job_id) or self.reaping.get(key)
        if job is not None:
            requeued = fencing.record_fenced(
                self.tx, fencing.fenced(job, ev, node.name, self.reaps.get(key)))
            log.warning(
                "node %s: job %s attempt %s was stopped by its runner, which heard "
                "nothing from the daemon for %.1fs (lease %gs)%s",
                node.name, ev.job_id, ev.attempt, ev.silent_for, ev.lease,
                "; the job goes back to the queue" if requeued else "",
            )
        self._take(ev, Outcome())

    def _take(
        self, ev: p.JournaledEvent, outcome: Outcome, job: JobRecord | None = None
    ) -> None:
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


def unknown(job: JobRecord | None, ev: p.JournaledEvent, fetched: Fetched) -> bool:
    """True when queue.db never dispatched this attempt: it has no such job and
    never had (a purged job keeps its events), or its job has not reached that
    attempt (a job that took the id after a restore)."""
    if job is not None:
        return ev.attempt > job.attempt
    return ev.job_id not in fetched.dispatched

