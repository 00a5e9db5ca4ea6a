"""The daemon's side of Slurm clusters: one `PilotManager` per `[[clusters]]` entry,
and the hooks through which its pilots become nodes.

* A running pilot is a node named `<cluster>/<job id>` whose link opens an `srun
  --overlap` step through the login connection; placement sees the time its
  allocation has left (`slot_fields`) and puts a job there only if the job's time
  limit fits (untimed jobs only with `allow_untimed`).
* A requested pilot shows in `queue nodes` with Slurm's pending reason.
* Untimed jobs leave a pilot `vacate_before` its end: they are preempted like jobs
  on a machine that went away, keeping their checkpoints.
* A pilot Slurm ended (scancel, walltime, preemption, its runner lost) is a node that
  went down: its jobs are reassigned at once. An idle one is down too (`lost`), once,
  unless the queue released it or its walltime ended it: then it just disappears.
* Ids of submitted pilots live in queue.db (see `PilotIds`), so a restarted daemon
  adopts them; each pilot's request, start and end is an event.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.abc
import msgspec

from nvq.clusters import slurm
from nvq.clusters.config import ClusterConfig
from nvq.clusters.login import pilot_job_id
from nvq.clusters.pilot_hooks import PilotOpener
from nvq.clusters.pilots import PilotManager
from nvq.clusters.scaling import WaitingJob, fits_shape, vacate_due
from nvq.clusters.slurm import PilotStatus
from nvq.config import NodeConfig
from nvq.daemon.core.apply import apply
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.held import locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.machines import lease_grants
from nvq.daemon.machines.link import NodeEvents, run_link
from nvq.daemon.machines.pilot_ids import PilotIds
from nvq.daemon.machines.pilot_link import STARTING, PilotLinkEvents
from nvq.daemon.machines.reassign import preempt
from nvq.daemon.placement.pending_view import time_limit
from nvq.domain import card_marks, reassign
from nvq.model import JobRecord, JobState, NewEvent, NodeView, Tx

log = logging.getLogger("nvq.clusters")
TICK = 1.0  # seconds between checks for untimed jobs that must leave a pilot


def cluster_name(node: str) -> str | None:
    """`hpc` for the pilot node `hpc/81234`; None for any other node."""
    name, sep, _ = node.partition("/")
    return name if sep else None


def lost(
    node: NodeRuntime, why: str, left: float | None, cluster: ClusterConfig | None
) -> bool:
    """Is the end of this idle pilot an outage (`node_down`, as when its link notices
    first, so one is said whichever does)? Yes for one whose runner was up and that
    neither the queue gave back nor its walltime ended; never for a starting one."""
    margin = cluster.vacate_before if cluster is not None else 0.0
    return (
        node.hello is not None
        and node.state != "down"
        and not why.startswith("released")
        and not (left is not None and left <= margin)
    )


class DaemonPilots:
    def __init__(self, state: State) -> None:
        self.state = state
        self.events: NodeEvents | None = None  # the pilots' links report here: see run
        self.clusters = {c.name: c for c in state.config.clusters}
        self.managers: dict[str, PilotManager] = {}
        self.status: dict[str, tuple[PilotStatus, float]] = {}  # node → (status, seen at)
        # pilots whose untimed jobs were told to leave: closed to them until they end
        self.vacated: set[str] = set()
        self.idle: dict[str, float] = {}
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.ids = PilotIds(state.store, state.home / "pilots.json")
        self._tg: anyio.abc.TaskGroup | None = None
        self._waiting: frozenset[int] = frozenset()  # pending jobs at the last kick
        # When each pending job started waiting, for `scale_after`: its submission, or
        # the moment this daemon first saw it back in the queue (requeued, reassigned,
        # released). Not `rank`: that is a dispatch sequence number, not a time.
        self.pending_since: dict[int, float] = {}

    # ---------------------------------------------------------- daemon side

    async def run(self, events: NodeEvents) -> None:
        """The managers, and the pilots' links, reporting to `events` (the runner side,
        which is built on the machines that hold these pilots: so handed in here)."""
        self.events = events
        if not self.clusters:
            return
        queue = self.state.config.queue
        # Managers exist before the first await: a `cluster scale` that arrives while
        # the ids load must find its cluster.
        for cluster in self.clusters.values():
            self.managers[cluster.name] = PilotManager(
                cluster,
                self,
                connect_timeout=queue.ssh_connect_timeout,
                keepalive=queue.ssh_keepalive,
            )
        known = await self.ids.load()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for name, manager in self.managers.items():
                manager.known.update(known.get(name, []))
                tg.start_soon(manager.run)
            tg.start_soon(self._vacate_loop)

    def reconfigure(self, clusters: list[ClusterConfig]) -> None:
        """`daemon reload` with changed `[[clusters]]` tables (the same names: adding or
        removing one needs a restart, `nvq.config.changes`)."""
        for cluster in clusters:
            manager = self.managers.get(cluster.name)
            if manager is not None and cluster != manager.cluster:
                self.clusters[cluster.name] = cluster
                manager.reconfigure(cluster)

    def manager(self, name: str) -> PilotManager:
        manager = self.managers.get(name)
        if manager is None:
            known = ", ".join(self.clusters) or "none configured"
            raise BadRequest(f"no cluster named {name!r} (clusters: {known})")
        return manager

    def after_placement(self) -> None:
        """After every placement pass: note pilots that just became idle (a job ended),
        and let the managers look when a job started waiting."""
        was_idle = set(self.idle)
        for name in list(self.status):
            self.idle_since(name)
        waiting = frozenset(j.id for j in self.state.jobs.values() if j.state is JobState.PENDING)
        self._note_pending(waiting)
        # Only news wakes a manager (each pass is an squeue over SSH); its own poll
        # catches jobs that reach scale_after.
        if set(self.idle) - was_idle or waiting - self._waiting:
            for manager in self.managers.values():
                manager.kick()
        self._waiting = waiting

    def _note_pending(self, waiting: frozenset[int]) -> None:
        now = time.time()
        for job_id in waiting - self.pending_since.keys():
            job = self.state.jobs[job_id]
            self.pending_since[job_id] = job.created_at if job.dispatched_at is None else now
        for job_id in self.pending_since.keys() - waiting:
            del self.pending_since[job_id]

    def waiting_since(self, job: JobRecord) -> float:
        since = self.pending_since.get(job.id)
        if since is None:  # not seen by a placement pass yet: it has just arrived
            since = job.created_at if job.dispatched_at is None else time.time()
        return since

    def time_left(self, node: str) -> float | None:
        seen = self.status.get(node)
        if seen is None or seen[0].time_left is None:
            return None
        status, at = seen
        assert status.time_left is not None
        return max(0.0, status.time_left - (time.time() - at))

    def slot_fields(self, node: str) -> dict[str, Any]:
        """Placement's view of a pilot's walltime (nothing for other nodes)."""
        cluster = self.clusters.get(cluster_name(node) or "")
        if cluster is None:
            return {}
        if node not in self.status:
            # Ending: `pilot_ended` drops its status first and its node last, and a
            # pass in between (while it waits for the lock) saw a node with no end and
            # sent a job to an allocation about to vanish, where it waited for ever.
            return {"time_left": 0.0, "untimed_ok": False, "time_margin": cluster.vacate_before}
        left = self.time_left(node)
        if node in self.vacated and left is not None:
            # Never above the margin again: squeue's time left, taken a moment before
            # it is read, can put a pilot its untimed jobs just left back over it.
            left = min(left, cluster.vacate_before)
        return {
            "time_left": left,
            "untimed_ok": cluster.allow_untimed,
            "time_margin": cluster.vacate_before,
        }

    def may_fit(self, job: JobRecord) -> bool:
        """Could a pilot of some cluster take the job (so it is not unschedulable)?"""
        waiting = self._waiting_job(job)
        return any(
            fits_shape(waiting, c)
            for c in self.clusters.values()
            if job.spec.node is None or c.name.startswith(job.spec.node.split("/")[0])
        )

    def node_views(self, views: list[NodeView]) -> list[NodeView]:
        """`queue nodes` with each pilot's compute host and time left, and the pilots
        Slurm has not started yet, with its reason."""
        out = []
        for view in views:
            seen = self.status.get(view.name)
            if seen is not None:
                view = msgspec.structs.replace(
                    view,
                    # A starting pilot's attach step waits for its runner: nothing
                    # about it is an error yet.
                    error=None if view.state == STARTING else view.error,
                    host=seen[0].host or view.host,
                    cluster=cluster_name(view.name) or msgspec.UNSET,
                    time_left=self.time_left(view.name),
                )
            out.append(view)
        for node, (status, _) in sorted(self.status.items()):
            if status.phase != "requested":
                continue
            reason = f" ({status.reason})" if status.reason else ""
            cluster = self.clusters.get(cluster_name(node) or "")
            out.append(
                NodeView(
                    name=node,
                    host=cluster.host if cluster else None,
                    state=f"requested: {status.state}{reason}",
                    last_seen=None,
                    cluster=cluster_name(node) or msgspec.UNSET,
                )
            )
        return out

    # ---------------------------------------------------------- PilotHooks

    def _waiting_job(self, job: JobRecord) -> WaitingJob:
        return WaitingJob(
            id=job.id,
            gpus=job.spec.gpus,
            memory_mb=job.spec.memory_mb or None,
            timeout=time_limit(job),
            waiting_since=self.waiting_since(job),
        )

    def waiting_jobs(self, cluster: ClusterConfig) -> list[WaitingJob]:
        return [
            self._waiting_job(job)
            for job in self.state.jobs.values()
            if job.state is JobState.PENDING
            and not job.spec.lane
            and not job.spec.after
            and not job.spec.after_any
            and (job.spec.node is None or job.spec.node.startswith(cluster.name))
        ]

    def idle_since(self, name: str) -> float | None:
        node = self.state.nodes.get(name)
        if node is None or node.state != "up" or self.state.jobs_on(name):
            self.idle.pop(name, None)
            return None
        return self.idle.setdefault(name, time.time())

    async def pilot_started(self, node: NodeConfig, open_channel: PilotOpener) -> None:
        runtime = NodeRuntime(
            name=node.name, config=node, allow=None, disk_over_link=True,
            runner_step=slurm.step_command(pilot_job_id(node.name), node.home, "run"),
        )
        runtime.card_marks = card_marks.of_node(self.state.cards, node.name)
        runtime.state = STARTING
        # An adopted pilot resumes where its journal was applied (exactly once).
        record = (await self.state.store.nodes()).get(node.name)
        if record is not None:
            runtime.journal_id = record.journal_id
            runtime.applied_seq = record.applied_seq
            runtime.drained = record.drained
            runtime.last_seen = record.last_seen
        # What an earlier daemon promised its runner (a stop's max_downtime) holds here
        await lease_grants.claim(self.state, runtime)
        self.state.nodes[node.name] = runtime
        events = self.events
        assert self._tg is not None and events is not None

        async def link() -> None:
            with anyio.CancelScope() as scope:
                self.scopes[node.name] = scope
                await run_link(
                    PilotLinkEvents(events, self._refuse_runner, self._runner_up),
                    runtime,
                    open_channel,
                )

        self._tg.start_soon(link)
        # The compute node Slurm chose (its status comes before its node), not the
        # login node every pilot is reached through.
        seen = self.status.get(node.name)
        host = (seen[0].host if seen else None) or node.host
        async with locked(self.state) as held:
            await held.commit(
                Tx(events=[NewEvent("pilot_started", None, node.name, {"host": host})])
            )
        log.info("pilot %s is running: attaching", node.name)

    async def _refuse_runner(self, node: NodeRuntime, why: str) -> None:
        log.error("%s", why)
        cluster, _, job_id = node.name.partition("/")
        manager = self.managers.get(cluster)
        if manager is not None and self._tg is not None:
            # Not on the link's own task: giving the pilot back cancels that task.
            self._tg.start_soon(manager.refuse_pilot, job_id, why)

    def _runner_up(self, node: NodeRuntime) -> None:
        cluster, _, job_id = node.name.partition("/")
        manager = self.managers.get(cluster)
        if manager is not None:
            manager.runner_up(job_id)
        if manager is not None and self._tg is not None:
            self._tg.start_soon(manager.check_home_shared, job_id)

    async def pilot_status(self, name: str, status: PilotStatus) -> None:
        self.status[name] = (status, time.time())

    async def pilot_ended(self, name: str, why: str) -> None:
        left = self.time_left(name)
        self.status.pop(name, None)
        self.vacated.discard(name)
        self.idle.pop(name, None)
        cluster, _, job_id = name.partition("/")
        async with locked(self.state) as held:
            await held.commit(self.ids.forgotten(cluster, job_id, why))
        scope = self.scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
        state = self.state
        node = state.nodes.get(name) or NodeRuntime(name=name, config=None)
        if state.jobs_on(name) or lost(node, why, left, self.clusters.get(cluster)):
            # Its jobs go back to the queue with their checkpoints, like any down node's.
            if self.events is not None:
                await self.events.on_disconnected(node, why)
            async with locked(state) as held:
                node.state = "down"
                tx = Tx(
                    events=[
                        NewEvent(
                            "node_down", None, name, {"error": why, "last_seen": node.last_seen}
                        )
                    ]
                )
                said = f"pilot {name}: {why}"
                now = time.time()
                jobs = list(state.jobs.values())
                await apply(held, jobs, lambda j: reassign.reassign(j, name, said, now), tx=tx)
        async with locked(state) as held:
            # Kills owed to the allocation have nothing left to kill.
            owed = [key for key, reap in state.reaps.items() if reap.node == name]
            if owed:
                await held.commit(Tx(drop_reaps=owed))
        state.nodes.pop(name, None)
        log.info("pilot %s ended: %s", name, why)
        state.kick()

    async def submitted(self, cluster: ClusterConfig, job_id: str) -> None:
        async with locked(self.state) as held:
            await held.commit(self.ids.added(cluster.name, job_id))

    async def alert(self, cluster: ClusterConfig, message: str) -> None:
        async with locked(self.state) as held:
            await held.commit(
                Tx(events=[NewEvent("cluster_refused", None, cluster.name, {"message": message})])
            )

    # ---------------------------------------------------------- walltime

    async def _vacate_loop(self) -> None:
        while True:
            await anyio.sleep(TICK)
            for name in list(self.status):
                cluster = self.clusters.get(cluster_name(name) or "")
                left = self.time_left(name)
                if cluster is None or not vacate_due(left, cluster):
                    continue
                self.vacated.add(name)
                async with locked(self.state) as held:
                    untimed = [
                        j
                        for j in self.state.jobs_on(name)
                        if j.state is JobState.RUNNING and time_limit(j) is None
                    ]
                    if untimed:
                        await preempt(
                            held,
                            untimed, f"the Slurm allocation of {name} ends in {left or 0:.0f}s"
                        )
