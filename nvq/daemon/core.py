"""The daemon's heart: in-memory state mirroring queue.db, and the reaction to every
runner event and CLI request.

Every change follows one path: decide (pure functions in `nvq.domain.transitions` and
`nvq.domain.placement`), commit (`Store.commit`, one transaction), apply to memory, then act
(frames to runners, replies to the CLI). One lock serialises that path, so decisions
are always made on a picture that matches the database.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from nvq import __version__
from nvq.config import Config
from nvq.daemon import policy
from nvq.daemon.machines import Machines
from nvq.daemon.nodes import NodeRuntime, Sender
from nvq.daemon.ops import Ops
from nvq.daemon.views import capacity_grew, gpu_views
from nvq.domain import attempts, deps, permissions, reassign, transitions
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob
from nvq.domain.starvation import Reservation
from nvq.domain.transitions import TransitionError
from nvq.model import ACTIVE_STATES, Job, JobSpec, JobState, NewEvent, NodeSeq, NodeView, Reap, Tx
from nvq.store import Store
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

# States whose jobs live in memory (the rest are history, read from the database).
LIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING, JobState.HELD, JobState.PAUSED})


class RequestError(Exception):
    """A CLI request that cannot be carried out; the message is shown as is."""


class Core:
    def __init__(self, config: Config, store: Store, home: Path) -> None:
        self.config = config
        self.store = store
        self.home = home
        self.started_at = time.time()
        self.jobs: dict[int, Job] = {}
        self.reaps: dict[tuple[int, int], Reap] = {}
        self.reaping: dict[tuple[int, int], Job] = {}  # settled jobs whose process may live
        self.nodes: dict[str, NodeRuntime] = {}
        self._lock = anyio.Lock()
        self._kick = anyio.Event()
        self._changed = anyio.Event()
        self._next_req = 1
        self.stop_requested = anyio.Event()
        self.placement_stats: dict[str, float] = {}  # the last pass, for `queue status`
        # job id → (job struct, its placement fields, PendingJob): see policy._pending_of
        self.pending_cache: dict[int, tuple[Job, dict[str, Any], PendingJob]] = {}
        self.ops = Ops(config, store, home)  # alerts, notifier, backups
        self.lane_paused: dict[str, bool] = {}  # lanes table: lane → paused
        self.lane_blocked: dict[str, str] = {}  # lane → why its head is not starting
        self.reservation: Reservation | None = None  # a starving head's node
        self.machines = Machines(self)  # reassignment, busy nodes, artifacts (issue 5)

    # ------------------------------------------------------------ start-up

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
        self.lane_paused = await self.store.lanes()
        await self.machines.load()
        for reap in await self.store.reaps():
            self.reaps[(reap.job_id, reap.attempt)] = reap
            settled = await self.store.job(reap.job_id)
            if settled is not None:
                self.reaping[(reap.job_id, reap.attempt)] = settled
        log.info(
            "loaded %d live jobs, %d pending reaps, %d nodes",
            len(self.jobs),
            len(self.reaps),
            len(self.nodes),
        )

    # ------------------------------------------------------------ helpers

    def kick(self) -> None:
        """Ask for a placement pass (coalesced: many kicks, one pass)."""
        self._kick.set()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _commit(self, tx: Tx) -> list[Job]:
        self.ops.prepare(tx)  # the alerts and notifications its events raise, same tx
        inserted = await self.store.commit(tx)
        self.ops.committed(tx)
        for job in [*inserted, *tx.jobs]:
            if job.state in LIVE_STATES:
                self.jobs[job.id] = job
            else:
                self.jobs.pop(job.id, None)
                self.pending_cache.pop(job.id, None)
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
        if tx.jobs or inserted:
            self._notify()
        return inserted

    async def get_job(self, job_id: int) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            job = await self.store.job(job_id)
        if job is None:
            raise RequestError(f"no job with id {job_id}")
        return job

    def _jobs_on(self, node: str) -> list[Job]:
        return self._jobs_by_node().get(node, [])

    def _jobs_by_node(self) -> dict[str, list[Job]]:
        """Running (and still reaping) jobs per node, in one sweep over the live jobs:
        callers that look at every node must not sweep once per node."""
        by_node: dict[str, list[Job]] = {}
        for j in self.jobs.values():
            if j.state is JobState.RUNNING and j.node is not None:
                by_node.setdefault(j.node, []).append(j)
        for j in self.reaping.values():
            if j.node is not None:
                by_node.setdefault(j.node, []).append(j)
        return by_node

    def _start_msg(self, job: Job) -> p.Start:
        assert job.node is not None
        return p.Start(
            job_id=job.id,
            attempt=job.attempt,
            node=job.node,
            name=job.name,
            command=job.command,
            gpus=list(job.gpus),
            env=dict(job.env),
            workdir=job.workdir,
            timeout=job.timeout,
            kill_grace=self.config.queue.kill_grace,
            memory_mb=job.memory_mb or None,
        )

    def post_kills(self, reaps: Iterable[Reap]) -> None:
        """Carry out committed reaps on nodes that are connected now; the others get
        theirs when they reconnect (`_reconcile`)."""
        for reap in reaps:
            node = self.nodes.get(reap.node)
            if node is not None and node.reconciled:
                node.post(self._kill_msg(reap))

    def _kill_msg(self, reap: Reap) -> p.Kill:
        return p.Kill(
            reap.job_id, reap.attempt, reason=reap.reason, grace=self.config.queue.kill_grace
        )

    # ------------------------------------------------------------ runner side

    async def on_connected(self, node: NodeRuntime, send: Sender) -> None:
        node.send = send
        node.state = "connecting"
        node.reconciled = False

    async def on_disconnected(self, node: NodeRuntime, error: str | None) -> None:
        node.send = None
        node.reconciled = False
        node.sample = None
        if node.state == "up":
            log.warning("node %s disconnected: %s", node.name, error)
            node.state = "connecting"
        node.error = error
        for req, deliver in list(node.log_streams.items()):
            deliver(p.LogData(req=req, eof=True, error=f"node {node.name} disconnected"))
        node.log_streams.clear()

    async def check_down(self, node: NodeRuntime) -> None:
        """A node unreachable for longer than `node_grace` is down: say so once."""
        if node.state == "down" or node.down_since is None:
            return
        if time.time() - node.down_since < self.config.queue.node_grace:
            return
        node.state = "down"
        async with self._lock:
            tx = Tx(
                events=[
                    NewEvent(
                        "node_down",
                        None,
                        node.name,
                        # last_seen names this outage: its alert is raised once.
                        {"error": node.error, "last_seen": node.last_seen},
                    )
                ]
            )
            # Its running jobs go back to the queue (or are lost, with --no-reassign),
            # in the same transaction; their old attempts are owed a kill (reaps).
            self.machines.reassign_down(node, tx, time.time())
            await self._commit(tx)
        log.warning("node %s is down: %s", node.name, node.error)
        self.kick()

    async def wait_unignored(self, node: NodeRuntime) -> None:
        while node.ignored:
            changed = self._changed
            await changed.wait()

    async def on_message(self, node: NodeRuntime, msg: p.RunnerMsg) -> None:
        node.mark_seen()
        if isinstance(msg, p.Sample):
            self._on_sample(node, msg)
        elif isinstance(msg, p.LogData):
            deliver = node.log_streams.get(msg.req)
            if deliver is not None:
                if msg.eof:
                    node.log_streams.pop(msg.req, None)
                deliver(msg)
        elif isinstance(msg, p.Hello):
            await self._on_hello(node, msg)
        elif isinstance(msg, p.ArtifactsManifest):
            self.machines.artifacts.on_manifest(msg)
        elif isinstance(msg, p.Busy):
            await self.machines.on_busy(node, msg)
        else:
            await self._on_journaled(node, msg)

    def _on_sample(self, node: NodeRuntime, sample: p.Sample) -> None:
        previous, node.sample = node.sample, sample
        for job_id, line in sample.progress.items():
            job = self.jobs.get(job_id)
            if job is not None and job.node == node.name:
                job.progress = line
        # Samples arrive from every node every few seconds; a placement pass over a
        # long queue is only worth it when a node may now hold more than before.
        if capacity_grew(previous, sample):
            self.kick()

    async def _on_hello(self, node: NodeRuntime, hello: p.Hello) -> None:
        async with self._lock:
            node.hello = hello
            node.state = "up"
            node.error = None
            node.down_since = None
            if hello.journal_id != node.journal_id:
                if node.journal_id:
                    log.warning("node %s has a new journal: seqs restart", node.name)
                node.journal_id = hello.journal_id
                node.applied_seq = 0
            node.replay_until = hello.journal_head
            await self.store.save_node(
                node.name, facts=msgspec.to_builtins(hello), last_seen=node.last_seen
            )
            await self._commit(
                Tx(events=[NewEvent("node_up", None, node.name, {"hostname": hello.hostname})])
            )
            log.info(
                "node %s up (runner %s, %d GPUs, journal %d, applied %d)",
                node.name,
                hello.runner_version,
                len(hello.gpus),
                hello.journal_head,
                node.applied_seq,
            )
            owner = self.machines.owner_msg(node)
            if owner is not None:
                node.post(owner)
            if node.applied_seq >= hello.journal_head:
                await self._reconcile(node)
        self.kick()

    async def _on_journaled(self, node: NodeRuntime, ev: p.JournaledEvent) -> None:
        async with self._lock:
            if ev.seq <= node.applied_seq:
                node.post(p.Ack(ev.seq))
                return
            job = self.jobs.get(ev.job_id)
            if job is None:
                job = self.reaping.get((ev.job_id, ev.attempt))
            if job is None:
                job = await self.store.job(ev.job_id)
            new: Job | None = None
            events: list[NewEvent] = []
            if job is not None:
                if isinstance(ev, p.JobStarted):
                    new, events = transitions.started(job, ev, node.name)
                elif isinstance(ev, p.JobExited):
                    reap = self.reaps.get((ev.job_id, ev.attempt))
                    live = self.jobs.get(ev.job_id)  # not a reaping snapshot: the job now
                    if (
                        reap is not None
                        and live is not None
                        and reassign.unreassign(live, reap, node.name)
                    ):
                        # The attempt finished while its node was away and the job has
                        # not started again anywhere: its result stands.
                        job = msgspec.structs.replace(live, state=JobState.RUNNING, node=node.name)
                    new, events = transitions.exited(job, ev, node.name)
                elif isinstance(ev, p.JobLost):
                    new, events = transitions.lost(job, ev, node.name)
                else:
                    new, events = transitions.launch_failed(job, ev, node.name)
            tx = Tx(
                jobs=[new] if new is not None else [],
                events=events,
                node_seq=NodeSeq(node.name, node.journal_id, ev.seq),
            )
            key = (ev.job_id, ev.attempt)
            if not isinstance(ev, p.JobStarted) and key in self.reaps:
                tx.drop_reaps.append(key)
            await self._commit(tx)
            node.applied_seq = ev.seq
            node.post(p.Ack(ev.seq))
            if not isinstance(ev, p.JobStarted):
                # Its last artifacts are fetched before the job may run again.
                self.machines.attempt_ended(node, new if new is not None else job, ev.attempt)
            if not node.reconciled and ev.seq >= node.replay_until:
                await self._reconcile(node)
        if not isinstance(ev, p.JobStarted):
            self.kick()

    async def _reconcile(self, node: NodeRuntime) -> None:
        """After a (re)connect and the journal's replay: make the runner and the
        database agree. Must hold the lock."""
        assert node.hello is not None
        now = time.time()
        active = {(a.job_id, a.attempt) for a in node.hello.active}
        tx = Tx()
        starts: list[Job] = []
        for job in list(self.jobs.values()):
            if job.state is not JobState.RUNNING or job.node != node.name:
                continue
            if (job.id, job.attempt) in active:
                continue
            if job.started_at is None:
                # The start is unresolved (daemon died or link dropped around it):
                # Start is idempotent per attempt, so asking again is safe.
                starts.append(job)
            else:
                new, evs = transitions.runner_forgot(job, node.name, now)
                if new is not None:
                    tx.jobs.append(new)
                    tx.events.extend(evs)
        kills: list[p.Kill] = []
        for job_id, attempt in active:
            live = self.jobs.get(job_id)
            if (
                live is None
                or live.attempt != attempt
                or live.node != node.name
                or live.state is not JobState.RUNNING
            ):
                reap = self.reaps.get((job_id, attempt))
                if reap is None:
                    # Recorded, so placement on this node waits for its exit.
                    reap = Reap(job_id, attempt, node.name, "orphan")
                    tx.add_reaps.append(reap)
                kills.append(self._kill_msg(reap))
        # Reaps for attempts the runner no longer runs are settled already.
        for key, reap in list(self.reaps.items()):
            if reap.node == node.name and key not in active:
                tx.drop_reaps.append(key)
        if tx:
            await self._commit(tx)
        node.reconciled = True
        # Kills first: an old attempt still running there (its job was reassigned
        # while the node was away) ends before anything new happens on the node.
        for kill in kills:
            node.post(kill)
        for job in starts:
            self.machines.post_start(node, job)
        self._notify()

    # ------------------------------------------------------------ placement

    async def placement_loop(self) -> None:
        while True:
            await self._kick.wait()
            self._kick = anyio.Event()
            try:
                await self.place_once()
            except Exception:
                log.exception("placement pass failed")

    def _slots(self) -> list[NodeSlot]:
        slots: list[NodeSlot] = []
        headroom = self.config.queue.headroom_mb
        by_node = self._jobs_by_node()
        for node in self.nodes.values():
            if node.hello is None or node.ignored:
                continue
            on_node = by_node.get(node.name, [])
            views = gpu_views(
                node.hello.gpus,
                node.sample.gpus if node.sample and node.accepting else None,
                on_node,
                headroom_mb=headroom,
                allow=node.allow,
            )
            gpus = [
                GpuSlot(
                    index=v.index,
                    total_mb=v.mem_total_mb,
                    foreign_mb=v.external_mem_mb,
                    queue_mb=v.mem_total_mb - v.external_mem_mb - headroom - v.free_mb,
                    schedulable=v.schedulable,
                )
                for v in views
            ]
            slots.append(
                NodeSlot(
                    name=node.name,
                    # Not while an old attempt owed a kill may still hold its cards.
                    accepting=node.accepting and not self.machines.fenced(node.name),
                    gpus=gpus,
                    cpu_jobs=sum(1 for j in on_node if not j.gpus),
                    running_jobs=len(on_node),
                    **policy.node_matching(node, on_node),
                    **self.machines.slot_fields(node),
                )
            )
        return slots

    async def _dependency_states(self, jobs: Iterable[Job]) -> dict[int, JobState]:
        ids = {d for j in jobs for d in deps.prerequisites(j)}
        states = {i: self.jobs[i].state for i in ids if i in self.jobs}
        states.update(await self.store.states_of(ids - states.keys()))
        return states

    def _may_fit_unknown_node(self, job: Job) -> bool:
        """A node that never reported its cards might hold anything: a job is only
        unschedulable once every node it could go to is known."""
        prefix = job.node_request or ""
        return any(
            n.hello is None and not n.ignored and n.name.startswith(prefix)
            for n in self.nodes.values()
        )

    async def place_once(self) -> None:
        async with self._lock:
            now = time.time()
            pass_started = time.perf_counter()  # the whole decision, as `queue status` shows
            tx = Tx()
            unplaceable = self.machines.unplaceable()
            candidates = [
                j
                for j in self.jobs.values()
                if j.state is JobState.PENDING and j.id not in unplaceable
            ]
            if not candidates:
                return
            with_deps = [j for j in candidates if j.after or j.after_any]
            dep_status: dict[int, deps.DepStatus] = {}
            if with_deps:
                states = await self._dependency_states(with_deps)
                for job in with_deps:
                    status = deps.dependency_status(job, states)
                    dep_status[job.id] = status
                    if isinstance(status, deps.Blocked):
                        held, evs = transitions.hold(job, status.on, status.state)
                        if held is not None:
                            tx.jobs.append(held)
                            tx.events.extend(evs)
            # Lanes, `%K` of arrays, and the job → PendingJob mapping: nvq.daemon.policy.
            pending = policy.pending_for_placement(self, candidates, dep_status)
            slots = self._slots()
            # place() plus a reservation for a starving head: nvq.domain.starvation.
            result = policy.place_with_reservation(self, slots, pending, now)
            self.placement_stats = {
                "last_pass_ms": round((time.perf_counter() - pass_started) * 1000, 3),
                "pending": len(pending),
                "placed": len(result.placements),
                "nodes": len(slots),
            }
            for decision in result.placements:
                new, evs = transitions.dispatch(
                    self.jobs[decision.job_id], node=decision.node, gpus=decision.gpus, now=now
                )
                if new is not None:
                    tx.jobs.append(new)
                    tx.events.extend(evs)
            policy.note_lane_blocks(self, slots, pending, result)
            for bad in result.unschedulable:
                if self._may_fit_unknown_node(self.jobs[bad.job_id]):
                    continue
                new, evs = transitions.unschedulable(self.jobs[bad.job_id], bad.reason, now)
                if new is not None:
                    tx.jobs.append(new)
                    tx.events.extend(evs)
            if not tx:
                return
            await self._commit(tx)
            for job in tx.jobs:
                if job.state is JobState.RUNNING and job.node is not None:
                    self.machines.post_start(self.nodes[job.node], job)

    # ------------------------------------------------------------ CLI requests

    async def submit(self, spec: JobSpec, user: str) -> Job:
        if not spec.command.strip():
            raise RequestError("no command given: put it after --, or pass it as one string")
        if spec.gpus < 0:
            raise RequestError("--gpus must be 0 or more")
        if spec.vram_mb < 0:
            raise RequestError("--vram must not be negative")
        if spec.timeout is not None and spec.timeout <= 0:
            raise RequestError("--timeout must be positive")
        job = transitions.new_job(spec, user=user, now=time.time())
        async with self._lock:
            for dep in {*spec.after, *spec.after_any}:
                await self.get_job(dep)
            # --cuda, --memory, --retries, --lane, --array: nvq.daemon.policy.
            new_jobs = await policy.shape_submission(self, spec, job)
            inserted = await self._commit(Tx(new_jobs=new_jobs))
        self.kick()
        return inserted[0]

    async def cancel(self, ids: Iterable[int], by: str) -> list[Job]:
        async with self._lock:
            jobs = [await self.get_job(i) for i in ids]
            tx = Tx()
            now = time.time()
            try:
                permissions.check(jobs, by, self.config.queue.admins, "cancel")
            except TransitionError as exc:
                raise RequestError(str(exc)) from None
            for job in jobs:
                try:
                    new, evs, reap = transitions.cancel(job, now=now, by=by)
                except TransitionError as exc:
                    raise RequestError(str(exc)) from None
                tx.jobs.append(new)
                tx.events.extend(evs)
                if reap is not None:
                    tx.add_reaps.append(reap)
            await self._commit(tx)
            self.post_kills(tx.add_reaps)
        # A cancelled lane head or prerequisite can let others move on: without a
        # kick they would wait for the next unrelated event.
        self.kick()
        return tx.jobs

    async def release(self, ids: list[int], by: str) -> list[Job]:
        async with self._lock:
            jobs = [await self.get_job(i) for i in ids]
            states = await self._dependency_states(jobs)
            tx = Tx()
            for job in jobs:
                try:
                    new, evs = transitions.release(job, deps.dead_prerequisites(job, states), by=by)
                except TransitionError as exc:
                    raise RequestError(str(exc)) from None
                assert new is not None
                tx.jobs.append(new)
                tx.events.extend(evs)
            await self._commit(tx)
        self.kick()
        return tx.jobs

    def find_node(self, name: str) -> NodeRuntime:
        """Exact name, else a unique prefix."""
        if name in self.nodes:
            return self.nodes[name]
        matches = [n for n in self.nodes.values() if n.name.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise RequestError(f"no node named {name!r} (nodes: {', '.join(self.nodes)})")
        raise RequestError(f"{name!r} matches several nodes: {', '.join(n.name for n in matches)}")

    async def set_node_flag(self, name: str, flag: str, value: bool) -> NodeView:
        """drain/resume (no new placements) and ignore/unignore (no link at all)."""
        async with self._lock:
            node = self.find_node(name)
            if flag == "ignored" and value and self._jobs_on(node.name):
                raise RequestError(
                    f"node {node.name} has running jobs; drain it and let them finish first"
                )
            setattr(node, flag, value)
            if flag == "drained":
                await self.store.save_node(node.name, drained=value)
            else:
                await self.store.save_node(node.name, ignored=value)
            kind = {
                ("drained", True): "node_drained",
                ("drained", False): "node_resumed",
                ("ignored", True): "node_ignored",
                ("ignored", False): "node_unignored",
            }[(flag, value)]
            await self._commit(Tx(events=[NewEvent(kind, None, node.name, {})]))
            if flag == "ignored" and value and node.link_scope is not None:
                node.link_scope.cancel()
            self._notify()
        self.kick()
        return next(v for v in self.node_views(include_ignored=True) if v.name == node.name)

    async def bootstrap(self, name: str, force: bool) -> dict[str, Any]:
        """Install (or refresh) the runner on an SSH node, then reconnect to it."""
        from nvq.daemon.ssh import NodeUnreachable
        from nvq.daemon.ssh.opener import connect, install_runner, managed

        node = self.find_node(name)
        if node.config is None:
            raise RequestError(
                f"{node.name} is the local node: its runner comes from this installation"
            )
        try:
            conn = await connect(node.config, self.config.queue)
            try:
                result = await install_runner(conn, node.config, force=force)
            finally:
                conn.close()
        except NodeUnreachable as exc:
            raise RequestError(str(exc)) from None
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
        return doc

    async def note(self, job_id: int, text: str | None, append: str | None, clear: bool) -> Job:
        async with self._lock:
            job = await self.get_job(job_id)
            if clear:
                note = ""
            elif append is not None:
                note = f"{job.note}\n{append}" if job.note else append
            elif text is not None:
                note = text
            else:
                return job
            new = msgspec.structs.replace(job, note=note)
            await self._commit(Tx(jobs=[new], events=[NewEvent("job_note", job.id, None, {})]))
            return new

    async def result(self, job_id: int, set_json: str | None) -> Any:
        async with self._lock:
            job = await self.get_job(job_id)
            if set_json is None:
                return job.result
            try:
                value = msgspec.json.decode(set_json)
            except msgspec.DecodeError as exc:
                raise RequestError(f"--set is not valid JSON: {exc}") from None
            new = msgspec.structs.replace(job, result=value)
            await self._commit(
                Tx(jobs=[new], events=[NewEvent("job_result_set", job.id, None, {})])
            )
            return value

    async def wait(self, ids: list[int], timeout: float | None) -> tuple[list[Job], int]:
        known = {j.id for j in await self.store.jobs(ids=ids)}
        missing = [i for i in ids if i not in known]
        if missing:
            raise RequestError(f"no job with id {missing[0]}")
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        # Live jobs are exactly the ones in memory: a wait on thousands of jobs costs a
        # dict lookup per unfinished job per change, and one read at the end.
        remaining = set(ids)
        while True:
            changed = self._changed
            remaining = {i for i in remaining if i in self.jobs}
            left = deadline - time.monotonic()
            if not remaining or left <= 0:
                by_id = {j.id: self.live(j) for j in await self.store.jobs(ids=ids)}
                jobs = [by_id[i] for i in ids]
                if remaining:
                    return jobs, 2
                ok = all(j.state is JobState.COMPLETED for j in jobs)
                return jobs, 0 if ok else 1
            with anyio.move_on_after(min(left, 3600)):
                await changed.wait()

    async def logs(
        self, job_id: int, *, lines: int, follow: bool, stream: str
    ) -> AsyncIterator[bytes]:
        job = await self.get_job(job_id)
        while follow and job.node is None and not job.state.finished:
            # `logs -f` on a job still waiting for a card follows it from its start.
            changed = self._changed
            await changed.wait()
            job = await self.get_job(job_id)
        if job.node is None:
            raise RequestError(f"job {job_id} has not started yet: it has no logs")
        node = self.nodes.get(job.node)
        if node is None or node.send is None or node.state != "up":
            raise RequestError(f"node {job.node} of job {job_id} is not reachable now")
        req = self._next_req
        self._next_req += 1
        send, receive = anyio.create_memory_object_stream[p.LogData](1000)

        def deliver(msg: p.LogData) -> None:
            try:
                send.send_nowait(msg)
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

        node.log_streams[req] = deliver
        node.post(p.Tail(req=req, job_id=job_id, stream=stream, lines=lines, follow=follow))  # type: ignore[arg-type]
        return self._drain_logs(node, req, receive)

    async def _drain_logs(self, node: NodeRuntime, req: int, receive: Any) -> AsyncIterator[bytes]:
        try:
            async with receive:
                async for msg in receive:
                    if msg.data:
                        yield msg.data
                    if msg.eof:
                        if msg.error:
                            raise RequestError(msg.error)
                        return
        finally:
            if node.log_streams.pop(req, None) is not None:
                node.post(p.Unfollow(req))

    async def tail_text(self, job: Job, lines: int, stream: str = "stdout") -> str | None:
        try:
            chunks = [
                c async for c in await self.logs(job.id, lines=lines, follow=False, stream=stream)
            ]
        except RequestError:
            return None
        return b"".join(chunks).decode(errors="replace")

    # ------------------------------------------------------------ views

    def status_pid(self) -> int:
        return os.getpid()

    def version(self) -> str:
        return __version__

    async def list_jobs(
        self, *, active: bool, states: list[str] | None, limit: int | None
    ) -> list[Job]:
        if active:
            return sorted(self.jobs.values(), key=lambda j: j.id)
        wanted = None
        if states:
            try:
                wanted = [JobState(s) for s in states]
            except ValueError as exc:
                raise RequestError(
                    f"{exc}; states are {', '.join(s.value for s in JobState)}"
                ) from None
        jobs = await self.store.jobs(states=wanted, limit=limit, newest_first=limit is not None)
        if limit is not None:
            jobs.reverse()
        return [self.live(j) for j in jobs]

    async def show(self, job_id: int, *, logs: int) -> dict[str, Any]:
        job = self.live(await self.get_job(job_id))
        doc: dict[str, Any] = msgspec.to_builtins(job)
        events = await self.store.events(job_id=job_id)
        doc["events"] = msgspec.to_builtins(events)
        doc["attempts"] = msgspec.to_builtins(attempts.derive(events))
        doc["why"] = await policy.explain(self, job)
        if logs:
            doc["logs"] = await self.tail_text(job, logs)
        return doc

    def live(self, job: Job) -> Job:
        """The freshest copy of a job (progress lives in memory between samples)."""
        return self.jobs.get(job.id, job)

    def node_views(self, *, include_ignored: bool = False) -> list[NodeView]:
        views: list[NodeView] = []
        headroom = self.config.queue.headroom_mb
        by_node = self._jobs_by_node()
        for node in self.nodes.values():
            if node.ignored and not include_ignored:
                continue
            on_node = by_node.get(node.name, [])
            hello = node.hello
            views.append(
                NodeView(
                    name=node.name,
                    host=node.host,
                    state=node.shown_state,
                    last_seen=node.last_seen,
                    drained=node.drained,
                    hostname=hello.hostname if hello else None,
                    backend=hello.backend if hello else None,
                    cuda=hello.cuda if hello else None,
                    mem_total_mb=hello.mem_total_mb if hello else None,
                    mem_free_mb=node.sample.mem_free_mb if node.sample else None,
                    running_jobs=len(on_node),
                    cpu_jobs=sum(1 for j in on_node if not j.gpus),
                    error=node.error,
                    gpus=gpu_views(
                        hello.gpus,
                        node.sample.gpus if node.sample else None,
                        on_node,
                        headroom_mb=headroom,
                        allow=node.allow,
                    )
                    if hello
                    else [],
                )
            )
        return views

    async def status(self) -> dict[str, Any]:
        counts = await self.store.state_counts()
        active = sorted(
            (
                j
                for j in self.jobs.values()
                if j.state in ACTIVE_STATES | {JobState.HELD, JobState.PAUSED}
            ),
            key=lambda j: j.id,
        )
        return {
            "daemon": {
                "pid": os.getpid(),
                "version": __version__,
                "started_at": self.started_at,
                "home": str(self.home),
            },
            "counts": {s.value: counts.get(s.value, 0) for s in JobState},
            "pending_reaps": len(self.reaps),
            "placement": self.placement_stats,
            "nodes": self.node_views(),
            "jobs": active,
            **await self.ops.status(),  # open alerts, notify health, last backup, keeper
        }
