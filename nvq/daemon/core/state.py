"""The daemon's in-memory mirror of queue.db: live jobs, nodes, owed kills, lanes.

Every change follows one path: decide (pure functions in `nvq.domain`), commit
(`Held.commit`: one `Store.commit` transaction, then the mirror), then act (the
`Effects` the decision returned beside its rows: frames to runners, artifact syncs, a
placement pass; carried out by `State.act` and nowhere else). `State.lock` serialises
that path, so decisions are always made on a picture that matches the database; only
`async with locked(state) as held` gives the `Held` that can commit (daemon/core/held.py).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import anyio
import msgspec

from nvq.config import Config
from nvq.daemon.core.effects import Actions, Effects
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.frames import kill_msg, start_msg, stop_signal
from nvq.daemon.core.later import Later
from nvq.daemon.core.live_index import LiveIndex
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.store_behind import Gaps
from nvq.daemon.core.subscribers import Subscribers
from nvq.daemon.core.usage import UsageBook
from nvq.domain import alerts, card_marks, reassign
from nvq.domain.reservations import CardReservation
from nvq.model import JobRecord, JobState, NewEvent, Reap, Tx
from nvq.store import Store
from nvq.store import reservations as reservation_table
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")


# States whose jobs live in memory (the rest are history, read from the database).
LIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.HELD, JobState.PAUSED})


class JobsSeen(Protocol):
    """The output copier (`nvq.daemon.output.output_copies`): told of every job a commit
    changed; `job logs` asks it how far a copy is and waits on it to grow."""

    def on_jobs(self, jobs: list[JobRecord]) -> None: ...
    def copying(self, job_id: int, attempt: int) -> bool: ...
    def grown(self, job_id: int, attempt: int) -> anyio.Event: ...
    async def settled(self, job_id: int, attempt: int, limit: float = 10.0) -> None: ...


class AttemptRecords(Protocol):
    """What a commit that ends attempts adds about them, in the same transaction: the
    contention record (`nvq.daemon.machines.contention_watch`), whose tallies are its
    own."""

    def closing(self, tx: Tx, before: Mapping[int, JobRecord]) -> list[NewEvent]: ...


class CommitHooks(Protocol):
    """What rides along with every commit: the alerts and notifications its events
    raise are added to the same transaction (`prepare`), deliveries start after it."""

    def prepare(self, tx: Tx) -> None: ...

    def committed(self, tx: Tx) -> None: ...


class State:
    def __init__(self, config: Config, store: Store, home: Path, hooks: CommitHooks) -> None:
        self.config = config
        self.store = store
        self.home = home
        self.hooks = hooks
        self.started_at = time.time()
        self.jobs: dict[int, JobRecord] = {}
        self.index = LiveIndex()  # the live jobs by what each event looks for; see commit
        self.reaps: dict[tuple[int, int], Reap] = {}
        self.reaping: dict[tuple[int, int], JobRecord] = {}  # settled jobs whose process may live
        self.nodes: dict[str, NodeRuntime] = {}
        self.lock = anyio.Lock()
        self._kick = anyio.Event()
        self._changed = anyio.Event()
        self.stop_requested = anyio.Event()
        self.lane_paused: dict[str, bool] = {}  # lanes table: lane → paused
        # `nvq reserve`: cards set aside over a window (daemon/placement/reserving.py)
        self.reservations: dict[str, CardReservation] = {}
        self.subscribers = Subscribers()  # the live event stream's readers
        self.store_behind = Gaps()  # job ids nodes know that queue.db did not
        self.later = Later()  # writes a request left to land once the disk has room
        self.usage = UsageBook(config)  # fair share's ledger (see daemon/core/usage.py)
        self.cards: card_marks.Marks = {}  # cards out of placement (domain/card_marks.py)
        self._followers: tuple[Actions, JobsSeen | None, AttemptRecords | None] | None = None

    def follow(
        self,
        actions: Actions,
        copies: JobsSeen | None = None,
        records: AttemptRecords | None = None,
    ) -> None:
        """Name who carries out what a commit owes beyond the mirror: starts and ended
        attempts (the artifact queue), every changed job (the output copier), and the
        records of ended attempts (the contention watch). All are built on this state,
        so `nvq.daemon.main` hands them over once they exist, before `load`; a commit
        with starts before then is a wiring bug."""
        self._followers = (actions, copies, records)

    @property
    def copies(self) -> JobsSeen | None:
        """The output copier (`job logs` asks it how far a copy is)."""
        return self._followers[1] if self._followers is not None else None

    async def load(self) -> None:
        queue = self.config.queue
        if queue.local_node:
            self.nodes[queue.local_node_name] = NodeRuntime(
                name=queue.local_node_name, config=None, allow=queue.local_gpus
            )
        for nc in self.config.nodes:
            self.nodes[nc.name] = NodeRuntime(name=nc.name, config=nc, allow=nc.gpus)
        records = await self.store.nodes()
        for name, rec in records.items():
            node = self.nodes.get(name)
            if node is None:
                continue
            node.journal_id = rec.journal_id
            node.applied_seq = rec.applied_seq
            node.drained = rec.drained
            node.ignored = rec.ignored
            node.last_seen = rec.last_seen
            if rec.facts:
                try:
                    node.hello = msgspec.convert(rec.facts, p.Hello)
                except msgspec.ValidationError:
                    node.hello = None
        for job in await self.store.jobs(states=LIVE_STATES):
            self.jobs[job.id] = job
            self.index.update(job)
        self.lane_paused = await self.store.lanes()
        self.cards = card_marks.decode(await self.store.meta(card_marks.META_KEY))
        self.mirror_cards()
        self.reservations = {r.name: r for r in await self.store.sync(reservation_table.load)}
        await self.usage.load(self.store)
        for reap in await self.store.reaps():
            self.reaps[(reap.job_id, reap.attempt)] = reap
            settled = await self.store.job(reap.job_id)
            if settled is not None:
                self.reaping[(reap.job_id, reap.attempt)] = settled
        await self._forget_removed_nodes()
        log.info(
            "loaded %d live jobs, %d pending reaps, %d nodes",
            len(self.jobs),
            len(self.reaps),
            len(self.nodes),
        )

    async def _forget_removed_nodes(self) -> None:
        """Nodes gone from config.toml will never report again: their running jobs go
        back to the queue (or are lost), with an alert naming the cause, and the kills
        owed to them are dropped (no link will ever carry them)."""
        # A cluster's pilots come back as nodes once their manager finds them running.
        clusters = {c.name for c in self.config.clusters}

        def gone(node: str) -> bool:
            return node not in self.nodes and node.partition("/")[0] not in clusters

        removed = sorted(
            {j.node for j in self.jobs.values() if j.node is not None and gone(j.node)}
        )
        tx = Tx(drop_reaps=[key for key, r in self.reaps.items() if gone(r.node)])
        now = time.time()
        for name in removed:
            log.warning("node %s is no longer in config.toml: settling its jobs", name)
            for job in self.jobs.values():
                outcome = reassign.node_removed(job, name, self.nodes.keys(), now)
                if outcome.job is not None:
                    tx.jobs.append(outcome.job)
                    tx.events.extend(outcome.events)
        if tx:
            async with self.lock:  # the state's own start: no Held outside yet
                await self.commit_held(tx)

    # ------------------------------------------------------------ wake-ups

    def kick(self) -> None:
        """Ask for a placement pass (coalesced: many kicks, one pass)."""
        self._kick.set()

    async def kicked(self) -> None:
        """Wait for the next kick, and take it."""
        await self._kick.wait()
        self._kick = anyio.Event()

    @property
    def changed(self) -> anyio.Event:
        """Set at the next change of a job or node: take it before looking, then wait
        on it, so a change in between is not missed."""
        return self._changed

    def notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # ------------------------------------------------------------ changing

    async def commit_held(self, tx: Tx, fx: Effects | None = None) -> list[JobRecord]:
        """Write `tx` in one transaction, mirror it, then carry out `fx` (what the
        change owes the world once it is durable); called through `Held.commit` only.
        While the disk is full this waits (and the mirror keeps the old picture). An
        empty `tx` writes nothing: only `fx` is carried out."""
        assert self.lock.statistics().owner == anyio.get_current_task(), "no lock held"
        inserted: list[JobRecord] = []
        if tx:
            inserted = await self._write(tx)
        if fx:
            self.act(fx)
        return inserted

    async def _write(self, tx: Tx) -> list[JobRecord]:
        self._name_jobs(tx)
        if tx.jobs:
            self.usage.charge(tx, self.jobs, self.card_sizes)
            records = self._followers[2] if self._followers is not None else None
            if records is not None:
                tx.events = [*tx.events, *records.closing(tx, self.jobs)]
        marks = card_marks.apply(self.cards, tx.events, time.time())
        if marks is not None:
            tx.meta = [*tx.meta, (card_marks.META_KEY, card_marks.encode(marks))]
        self.hooks.prepare(tx)
        inserted = await self.store.commit(tx)
        if marks is not None:
            self.cards = marks
            self.mirror_cards()
        self.usage.committed(tx)
        self.hooks.committed(tx)
        self.subscribers.publish(self.store.last_events)
        await self.report_full_disk()
        for job in [*inserted, *tx.jobs]:
            if job.state in LIVE_STATES:
                self.jobs[job.id] = job
                self.index.update(job)
            else:
                self.jobs.pop(job.id, None)
                self.index.forget(job.id)
        for reap in tx.add_reaps:
            key = (reap.job_id, reap.attempt)
            self.reaps[key] = reap
            settled = next((j for j in tx.jobs if j.id == reap.job_id), None)
            if settled is not None:
                self.reaping[key] = settled
        for key in tx.drop_reaps:
            self.reaps.pop(key, None)
            self.reaping.pop(key, None)
        for lane, paused in tx.lanes:
            self.lane_paused[lane] = paused
        if self.copies is not None and tx.jobs:
            self.copies.on_jobs(tx.jobs)
        if tx.jobs or inserted:
            self.notify()
        return inserted

    def mirror_cards(self) -> None:
        """Give each node its cards' marks (what `open_cards` leaves out)."""
        for node in self.nodes.values():
            node.card_marks = card_marks.of_node(self.cards, node.name)

    def act(self, fx: Effects) -> None:
        """Carry out what a committed change owes, in one fixed order: a node marked
        reconciled first (so its kills and starts may go), kills before anything new
        happens on a node, then acks, starts, ended attempts' syncs, a placement pass.
        Must hold the lock (placement must see an ended attempt's sync at once)."""
        for node in fx.reconciled:
            node.reconciled = True
        self.post_kills(fx.kills)
        for node, reap in fx.kills_now:
            node.post(self.kill_msg(reap))
        for node, seq in fx.acks:
            node.applied_seq = max(node.applied_seq, seq)
            node.post(p.Ack(seq))
        if fx.starts or fx.ended:
            assert self._followers is not None, "no one to carry out starts and syncs"
            actions = self._followers[0]
            for job in fx.starts:
                if job.node is not None:
                    actions.post_start(self.nodes[job.node], job)
            for e in fx.ended:
                actions.attempt_ended(e.node, e.job, e.attempt, kept=e.kept)
        if fx.reconciled:
            self.notify()  # a node's picture changed: waiters look again
        if fx.kick:
            self.kick()

    def _name_jobs(self, tx: Tx) -> None:
        """A new job gets a random nonce, stored with it: with the queue id it tells
        the runner this job from any other that had the same id (a queue restored
        from a backup numbers jobs again). Its attempts share it, as they share the
        job's directory on a node (checkpoints carry over from one to the next)."""
        for job in tx.new_jobs:
            if not job.nonce:
                job.nonce = secrets.token_hex(8)

    async def report_full_disk(self) -> None:
        """Once writes go through again after a full disk, say that it happened."""
        spell, self.store.disk_was_full = self.store.disk_was_full, None
        if spell is not None:
            await self.store.commit(Tx(alerts=[alerts.disk_full_alert(*spell)]))

    def post_kills(self, reaps: Iterable[Reap]) -> None:
        """Carry out committed reaps on nodes that are connected now; the others get
        theirs when they reconnect (reconcile)."""
        for reap in reaps:
            node = self.nodes.get(reap.node)
            if node is not None and node.reconciled:
                node.post(self.kill_msg(reap))

    def kill_msg(self, reap: Reap) -> p.Kill:
        job = self.reaping.get((reap.job_id, reap.attempt)) or self.jobs.get(reap.job_id)
        nonce = job.nonce if job is not None else ""
        return kill_msg(
            reap, kill_grace=self.config.queue.kill_grace, queue_id=self.store.queue_id,
            nonce=nonce, signal=stop_signal(job, reap),
        )

    def start_msg(self, job: JobRecord) -> p.Start:
        return start_msg(job, config=self.config, queue_id=self.store.queue_id)

    # ------------------------------------------------------------ looking up

    async def get_job(self, job_id: int) -> JobRecord:
        job = self.jobs.get(job_id)
        if job is None:
            job = await self.store.job(job_id)
        if job is None:
            raise BadRequest(f"no job with id {job_id}")
        return job

    def live(self, job: JobRecord) -> JobRecord:
        """The freshest copy of a job (progress lives in memory between samples)."""
        return self.jobs.get(job.id, job)

    def card_sizes(self, node: str | None, gpus: Sequence[int]) -> list[int | None]:
        """Each card's memory (MiB) as the node reported it; None where unknown."""
        runtime = self.nodes.get(node) if node is not None else None
        hello = runtime.hello if runtime is not None else None
        sizes = {g.index: g.total_mb for g in hello.gpus} if hello is not None else {}
        return [sizes.get(i) for i in gpus]

    def jobs_on(self, node: str) -> list[JobRecord]:
        return self.jobs_by_node().get(node, [])

    def started_on_up_nodes(self) -> list[tuple[JobRecord, NodeRuntime]]:
        """Running jobs whose process has started, each with its node, where the node is
        up: what the once-a-second checks (periodic artifact syncs, --max-runtime) walk."""
        found = []
        for job in self.index.running.values():
            node = self.nodes.get(job.node) if job.node is not None else None
            if node is not None and node.state == "up" and job.started_at is not None:
                found.append((job, node))
        return found

    def jobs_by_node(self) -> dict[str, list[JobRecord]]:
        """Running (and still reaping) jobs per node, in one sweep over the live jobs:
        callers that look at every node must not sweep once per node."""
        by_node: dict[str, list[JobRecord]] = {}
        for j in self.index.running.values():
            if j.node is not None:
                by_node.setdefault(j.node, []).append(j)
        for j in self.reaping.values():
            if j.node is not None:
                by_node.setdefault(j.node, []).append(j)
        return by_node

    def find_node(self, name: str) -> NodeRuntime:
        """Exact name, else a unique prefix."""
        if name in self.nodes:
            return self.nodes[name]
        matches = [n for n in self.nodes.values() if n.name.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise BadRequest(f"no node named {name!r} (nodes: {', '.join(self.nodes)})")
        raise BadRequest(f"{name!r} matches several nodes: {', '.join(n.name for n in matches)}")
