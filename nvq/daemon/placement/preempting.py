"""The placement pass's preemption: nodes held for urgent jobs while their victims
stop, and the victims chosen (`nvq.domain.preemption`) for jobs the pass left waiting.

A victim is stopped the way a move or a busy owner stops a job (`PlacementInputs.preempt`:
its `--signal` or TERM, `kill_grace`, KILL; its artifacts synced) and goes back to
the queue without spending a `--retries` restart; `job_preempted` names the job it
made room for (`by`). Must run under the state's lock, inside the pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.held import Held
from nvq.daemon.core.state import State
from nvq.daemon.placement import quotas
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import Memory
from nvq.domain import preemption
from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult, dispatch_key, place
from nvq.model import JobRecord, JobState


def holds(state: State, memory: Memory) -> dict[str, preemption.Hold]:
    """The holds still in force, by node (ended ones are forgotten here)."""
    stopping = {j for (j, _), r in state.reaps.items() if r.reason == "preempted"}
    kept: dict[str, preemption.Hold] = {}
    for job_id, hold in list(memory.preempt_holds.items()):
        job = state.jobs.get(job_id)
        node = state.nodes.get(hold.node)
        sample = node.sample.time if node is not None and node.sample is not None else None
        ends, hold.cleared = preemption.hold_ends(hold, bool(hold.victims & stopping), sample)
        if job is None or job.state is not JobState.PENDING or ends or hold.node in kept:
            del memory.preempt_holds[job_id]
            continue
        kept[hold.node] = hold
    return kept


async def restore_holds(state: State, memory: Memory) -> None:
    """After a restart: the holds of victims still stopping, from their `job_preempted`
    events (`by`), so an urgent job does not ask for more victims meanwhile."""
    memory.preempt_holds_restored = True
    for (job_id, _), reap in list(state.reaps.items()):
        if reap.reason != "preempted":
            continue
        events = await state.store.events(job_id=job_id)
        said = next((e for e in reversed(events) if e.kind == "job_preempted"), None)
        by = said.data.get("by") if said is not None else None
        if not isinstance(by, int) or said is None or said.node is None:
            continue
        hold = memory.preempt_holds.get(by)
        if hold is None:
            memory.preempt_holds[by] = preemption.Hold(
                job_id=by, node=said.node, victims=frozenset({job_id})
            )
        elif hold.node == said.node:
            hold.victims = hold.victims | {job_id}


async def place_around_holds(
    state: State,
    memory: Memory,
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    place_rest: Callable[[Sequence[NodeSlot], Sequence[PendingJob]], PlacementResult],
) -> PlacementResult:
    """`place_rest` on every node but the held ones; then each held node whose victims
    have all stopped, for its urgent job alone when it went nowhere else (not before:
    a stopping victim may still hold memory a sample has not shown)."""
    if not memory.preempt_holds_restored:
        await restore_holds(state, memory)
    held = holds(state, memory)
    if not held:
        return place_rest(slots, pending)
    queue = state.config.queue
    closed = [msgspec.structs.replace(s, accepting=False) if s.name in held else s for s in slots]
    result = place_rest(closed, pending)
    placed = {p.job_id for p in result.placements}
    by_id = {p.id: p for p in pending}
    extra = []
    for slot in slots:
        hold = held.get(slot.name)
        if hold is None or hold.cleared is None:
            continue
        if hold.job_id in placed or hold.job_id not in by_id:
            continue
        alone = place(
            [slot],
            [by_id[hold.job_id]],
            headroom_mb=queue.headroom_mb,
            max_cpu_jobs=queue.max_cpu_jobs_per_node,
        )
        extra.extend(alone.placements)
    if not extra:
        return result
    return PlacementResult([*result.placements, *extra], list(result.unschedulable))


async def preempt_for_waiting(
    held: Held,
    memory: Memory,
    inputs: PlacementInputs,
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    result: PlacementResult,
) -> None:
    """Stop victims for the jobs this pass left waiting that preemption can place;
    tell the pass's facts which jobs wait for their victims (`job why`)."""
    await _preempt(held, memory, inputs, slots, pending, result)
    if memory.pass_facts is not None:
        memory.pass_facts.holds = {
            h.job_id: (h.node, sorted(h.victims)) for h in memory.preempt_holds.values()
        }


async def _preempt(
    held: Held,
    memory: Memory,
    inputs: PlacementInputs,
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    result: PlacementResult,
) -> None:
    state = held.state
    if not state.config.queue.preempt:
        return
    running = [j for j in state.index.running.values() if j.spec.preemptible]
    if not running:
        return  # the usual pass: nothing may be preempted, nothing to work out
    settled = {p.job_id for p in result.placements} | {u.job_id for u in result.unschedulable}
    waiting = sorted(
        (p for p in pending if p.id not in settled and p.id not in memory.preempt_holds),
        key=dispatch_key(memory.fair_share),
    )
    if not waiting:
        return
    queue = state.config.queue
    plans = preemption.plan(
        preemption.after_pass(slots, result.placements, pending),
        waiting,
        [c for j in running if (c := candidate(state, j)) is not None],
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
        ceiling=ceilings(state, {p.user for p in waiting}),
    )
    for chosen in plans:
        urgent = state.jobs[chosen.job_id]
        victims = [state.jobs[v] for v in chosen.victims]
        why = (
            f"by job {urgent.id} (priority {urgent.spec.priority}), "
            f"which needs its cards on {chosen.node}"
        )
        stopped = await inputs.preempt(held, victims, why, by=urgent.id)
        memory.preempt_holds[urgent.id] = preemption.Hold(
            job_id=urgent.id, node=chosen.node, victims=frozenset(j.id for j in stopped)
        )


def candidate(state: State, job: JobRecord) -> preemption.Candidate | None:
    """A running preemptible job as a victim: on each card, the larger of its
    reservation and what the node's last sample shows its processes using."""
    if job.node is None or job.state is not JobState.RUNNING:
        return None
    node = state.nodes.get(job.node)
    used: dict[int, int] = {}
    if node is not None and node.sample is not None:
        for gpu in node.sample.gpus:
            for proc in gpu.processes:
                if proc.job_id == job.id and proc.used_mb is not None:
                    used[gpu.index] = used.get(gpu.index, 0) + proc.used_mb
    return preemption.Candidate(
        job_id=job.id,
        node=job.node,
        user=job.user,
        priority=job.spec.priority,
        started_at=job.started_at or job.dispatched_at or 0.0,
        cards={i: max(job.spec.vram_mb, used.get(i, 0)) for i in job.gpus},
        memory_mb=job.spec.memory_mb,
    )


def ceilings(state: State, users: set[str]) -> dict[str, int]:
    """Each waiting user's `max_preempt_priority`, where one binds them."""
    config = state.config
    exempt = queue_admins(state) if config.limits.exempt_admins else frozenset()
    out: dict[str, int] = {}
    for user in users - exempt:
        cap = quotas.limits_of(config, user).max_preempt_priority
        if cap is not None:
            out[user] = cap
    return out
