"""The daemon's side of machines that come and go: reassigning the jobs of a node
that stays down, stopping jobs on a node that turned busy or that outran
`--max-runtime` on a borrowed node, and fencing placement until old attempts are
gone (or their last artifacts synced: `nvq.daemon.artifacts.artifact_syncs`). It is
what placement reads through `nvq.daemon.placement.inputs.PlacementInputs`.

Decisions come from `nvq.domain.reassign` (pure); every change goes through
`nvq.daemon.core.apply` or `Held.commit` under the state's lock.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import anyio

from nvq.config.lease import reassign_reason
from nvq.daemon.core.apply import apply
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.held import Held, locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.placement.inputs import PilotNodes
from nvq.domain import reassign
from nvq.domain.card_share import holds_whole
from nvq.model import JobRecord, JobState, NewEvent, Tx
from nvq.store import busy as busy_table
from nvq_runner import protocol as p

log = logging.getLogger("nvq.machines")
TICK = 1.0  # seconds between checks of --max-runtime


class Syncing(Protocol):
    """What reassignment reads of the artifact queue (`ArtifactSyncs`, above it)."""

    syncing: set[int]  # jobs whose final sync runs: not placeable


async def preempt(
    held: Held, jobs: list[JobRecord], why: str, by: int | None = None
) -> list[JobRecord]:
    """Stop running attempts and put their jobs back in line (`by`: the urgent job
    they make room for)."""
    return await apply(held, jobs, lambda j: reassign.preempt(j, why, by))


class Reassigner:
    """Reassignment, busy owners and `--max-runtime`; what placement asks of the machines
    (`PlacementInputs`), the pilots included."""

    def __init__(self, state: State, syncs: Syncing, pilots: PilotNodes | None = None) -> None:
        self.state = state
        self.syncs = syncs
        self._pilots = pilots  # [[clusters]]: Slurm pilots as nodes
        self.forbidden: set[str] = set()  # owners who ran `queue forbid-busy-assign`
        # job → the borrowed node whose --max-runtime it ran out: avoided next time
        self.avoid: dict[int, str] = {}

    async def load(self) -> None:
        modes = await self.state.store.sync(busy_table.busy_modes)
        for name, mode in modes.items():
            node = self.state.nodes.get(name)
            if node is not None:
                node.busy_mode = mode
        self.forbidden = await self.state.store.sync(busy_table.forbidden)

    # ------------------------------------------------------------ placement inputs

    @property
    def pilots(self) -> PilotNodes | None:
        return self._pilots

    def busy(self, node: NodeRuntime) -> bool:
        return reassign.effective_busy(node.busy_mode, node.busy_reported)

    def fenced(self, node: str) -> bool:
        """An old attempt that must be killed first may still run there."""
        return any(
            r.node == node and r.reason in reassign.FENCING_REASONS
            for r in self.state.reaps.values()
        )

    def unplaceable(self) -> set[int]:
        """Jobs that may not be placed now: their previous attempt is still being
        stopped, or its artifacts synced. One set per pass, not a scan per job."""
        stopping = {
            key[0] for key, r in self.state.reaps.items() if r.reason in reassign.STOPPING_REASONS
        }
        return stopping | self.syncs.syncing | self._awaiting_inputs()

    def _awaiting_inputs(self) -> set[int]:
        """Pending jobs a prerequisite of which is still having its final sync: they
        would start without its last artifacts at `$NVQ_INPUTS`."""
        syncing = self.syncs.syncing
        if not syncing:
            return set()
        return {j.id for j in self.state.jobs.values() if j.state is JobState.PENDING
                and not syncing.isdisjoint([*j.spec.after, *j.spec.after_any])}

    def slot_fields(self, node: NodeRuntime) -> dict[str, Any]:
        pilot = self._pilots.slot_fields(node.name) if self._pilots is not None else {}
        return {"busy": self.busy(node), "owner": node.owner, **pilot}

    def pending_fields(self, job: JobRecord) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "user": job.user,
            "forbid_busy": job.user in self.forbidden,
            "whole": holds_whole(job, self.state.config.queue.share_cards),
        }
        avoid = self.avoid.get(job.id)
        if avoid is not None:
            fields |= self._steered(job, avoid, fields)
        return fields

    def _steered(self, job: JobRecord, avoid: str, fields: dict[str, Any]) -> dict[str, Any]:
        """The nodes a job that ran out its time on `avoid` may go to now (none given:
        any), by the rule of `reassign.steer_clear`."""
        from nvq.daemon.placement.pending_view import to_pending
        from nvq.daemon.placement.slots import node_slots

        queue = self.state.config.queue
        base = to_pending(job, **fields)
        steered = reassign.steer_clear(
            base,
            avoid,
            node_slots(self.state, self),
            headroom_mb=queue.headroom_mb,
            max_cpu_jobs=queue.max_cpu_jobs_per_node,
        )
        return {} if steered is base else {"nodes": steered.nodes}

    # ------------------------------------------------------------ node down

    async def reassign_down(self, held: Held, node: NodeRuntime, tx: Tx, now: float) -> None:
        """Commit `tx` (the node's going down) with the reassignment of every job
        running there; their old attempts are owed a kill."""
        queue = self.state.config.queue
        since = node.down_since if node.down_since is not None else now
        why = reassign_reason(node.name, since, queue.node_grace, queue.kill_grace,
                              node.lease_book.until)
        if node.error:
            why += f" ({node.error})"
        jobs = list(self.state.jobs.values())
        await apply(held, jobs, lambda j: reassign.reassign(j, node.name, why, now), tx=tx)

    # ------------------------------------------------------------ preemption

    async def preempt(
        self, held: Held, jobs: list[JobRecord], why: str, by: int | None = None
    ) -> list[JobRecord]:
        return await preempt(held, jobs, why, by)

    async def _busy_changed(self, held: Held, node: NodeRuntime, was: bool) -> None:
        now = self.busy(node)
        if now == was:
            return
        kind = "node_busy" if now else "node_idle"
        data = {"mode": node.busy_mode, **node.busy_detail}
        await held.commit(
            Tx(events=[NewEvent(kind, None, node.name, data)]), Effects(kick=True)
        )
        if now:
            victims = reassign.busy_victims(self.state.jobs_on(node.name), node.owner)
            await self.preempt(held, victims, f"node {node.name} is in use by its owner {node.owner}")

    async def on_busy(self, node: NodeRuntime, msg: p.Busy) -> None:
        async with locked(self.state) as held:
            was = self.busy(node)
            node.busy_reported = msg.busy
            node.busy_detail = {"sessions": msg.sessions, "idle": msg.idle}
            await self._busy_changed(held, node, was)

    async def set_busy_mode(self, name: str, mode: str) -> dict[str, Any]:
        if mode not in busy_table.BUSY_MODES:
            raise BadRequest(f"busy mode {mode!r}: expected on, off or auto")
        async with locked(self.state) as held:
            node = self.state.find_node(name)
            was = self.busy(node)
            await self.state.store.write(lambda c: busy_table.set_busy_mode(c, node.name, mode))
            node.busy_mode = mode
            await held.commit(
                Tx(events=[NewEvent("node_busy_mode", None, node.name, {"mode": mode})])
            )
            await self._busy_changed(held, node, was)
        return self.busy_view(node)

    def busy_view(self, node: NodeRuntime) -> dict[str, Any]:
        return {
            "node": node.name,
            "owner": node.owner,
            "mode": node.busy_mode,
            "reported": node.busy_reported,
            "busy": self.busy(node),
            **node.busy_detail,
        }

    async def set_forbid(self, user: str, forbid: bool) -> dict[str, Any]:
        async with locked(self.state) as held:
            await self.state.store.write(lambda c: busy_table.set_forbidden(c, user, forbid))
            if forbid:
                self.forbidden.add(user)
            else:
                self.forbidden.discard(user)
            kind = "busy_assign_forbidden" if forbid else "busy_assign_allowed"
            event = NewEvent(kind, None, None, {"user": user})
            await held.commit(Tx(events=[event]), Effects(kick=True))
        return {"user": user, "busy_assign": not forbid}

    def owner_msg(self, node: NodeRuntime) -> p.Owner | None:
        """What the runner needs to report its owner's activity (new runners only)."""
        if node.hello is None or "owner" not in node.hello.features:
            return None
        return p.Owner(user=node.owner, idle=self.state.config.queue.busy_idle)

    # ------------------------------------------------------------ tasks

    async def run(self) -> None:
        """--max-runtime on borrowed nodes, checked every TICK."""
        while True:
            await anyio.sleep(TICK)
            try:
                await self._tick(time.time())
            except Exception:
                log.exception("machines tick failed")

    async def _tick(self, now: float) -> None:
        state = self.state
        over: list[JobRecord] = []
        for job, node in state.started_on_up_nodes():
            if reassign.runtime_exceeded(job, node.owner, now):
                over.append(job)
        if over:
            async with locked(state) as held:
                live = [state.jobs[j.id] for j in over if j.id in state.jobs]
                still = [
                    j
                    for j in live
                    if j.node in state.nodes
                    and reassign.runtime_exceeded(j, state.nodes[j.node].owner, now)
                ]
                await self.preempt(
                    held,
                    still,
                    "ran past its --max-runtime on a borrowed node; its next attempt goes "
                    "to another node while one can hold it",
                )
                for job in still:
                    if job.node is not None:
                        self.avoid[job.id] = job.node
