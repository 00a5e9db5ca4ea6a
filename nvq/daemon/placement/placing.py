"""The placement pass and what feeds it: which jobs may start (dependencies, lanes,
`%K` of arrays; only each request shape's first members, see
`nvq.domain.pending_groups`), the decision itself (`nvq.domain.placement` with a
reservation against starvation, `nvq.domain.starvation`) on what the nodes can hold
(`nvq.daemon.placement.slots`), and the facts kept to explain why a job still waits
(`nvq.daemon.placement.explain`)."""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

import anyio

from nvq.daemon.core.apply import record
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.placement import preempting, quotas, reserving
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.pending_view import in_place_nodes, time_limit, to_pending
from nvq.daemon.placement.slots import node_slots
from nvq.daemon.placement.waits import PassFacts, after_placements, node_facts
from nvq.domain import arrays, deps, fair_share, lanes, ordering, starvation, transitions
from nvq.domain.pending_groups import Capacity
from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult, dispatch_key
from nvq.domain.quotas import Caps, Standing
from nvq.model import JobRecord, JobState, Tx

log = logging.getLogger("nvq.daemon")


async def placement_loop(state: State, memory: Memory, inputs: PlacementInputs) -> None:
    while True:
        # Passes follow events; the timed exceptions are the moment the head of the
        # queue starts to starve, when it must reserve a node even if nothing happens,
        # and the moment a user's rolling day falls back under `max_gpu_hours`.
        # and the `--begin` time of a waiting job.
        # and a reservation's start or end.
        timers = (memory.starves_at, memory.quota_wake_at, memory.begins_at)
        due = [t for t in (*timers, memory.reservations_change_at) if t]
        wait = max(0.0, min(due) - time.time()) if due else math.inf
        with anyio.move_on_after(wait):
            await state.kicked()
        memory.starves_at = memory.quota_wake_at = memory.begins_at = None
        memory.reservations_change_at = None
        try:
            await place_once(state, memory, inputs)
        except Exception:
            log.exception("placement pass failed")
        if inputs.pilots is not None:
            inputs.pilots.after_placement()


async def place_once(state: State, memory: Memory, inputs: PlacementInputs) -> None:
    async with locked(state) as held:
        now = time.time()
        pass_started = time.perf_counter()  # the whole decision, as `queue status` shows
        tx = Tx()
        unplaceable = inputs.unplaceable()
        queue = state.index.pending
        memory.prune(state.jobs)
        if not len(queue):
            memory.pass_facts = PassFacts(unplaceable=unplaceable)
            return
        slots = node_slots(state, inputs, memory.slot_cache)
        # Each shape's first members only: the rest cannot start in this pass (see
        # nvq.domain.pending_groups), so a long queue of alike jobs costs one check.
        singles, grouped = queue.window(_bounds(state, memory, inputs, slots), skip=unplaceable)
        with_deps = [j for j in singles if j.spec.after or j.spec.after_any]
        dep_status: dict[int, deps.DepStatus] = {}
        if with_deps:
            states = await dependency_states(state, with_deps)
            for job in with_deps:
                status = deps.dependency_status(job, states)
                dep_status[job.id] = status
                if isinstance(status, deps.Blocked):
                    record(tx, transitions.hold(job, status.on, status.state, now=now))
        ready = pending_for_placement(state, memory, inputs, [*singles, *grouped], dep_status)
        # Users' limits: who is held back now, and how much the rest may still start.
        limited = quotas.standings(state, ready, now)
        pending = quotas.admitted(ready, limited)
        caps = Caps(limited.values()) if limited else None
        # Nodes kept for urgent jobs whose preemption victims are stopping, then the rest.
        result = await preempting.place_around_holds(
            state, memory, slots, pending,
            lambda s, js: place_with_reservation(state, memory, s, js, now, caps),
        )
        memory.placement_stats = {
            "last_pass_ms": round((time.perf_counter() - pass_started) * 1000, 3),
            "pending": len(queue),
            "considered": len(pending),
            "placed": len(result.placements),
            "nodes": len(slots),
        }
        for decision in result.placements:
            job = state.jobs[decision.job_id]
            record(tx, transitions.dispatch(job, node=decision.node, gpus=decision.gpus, now=now,
                                            note=decision.note))
        note_lane_blocks(memory, slots, pending, result)
        facts = pass_facts(state, memory, inputs, slots, pending, result, dep_status)
        facts.unplaceable = unplaceable
        facts.quota = quota_after(limited, ready, result)
        facts.reservations = dict(state.reservations)
        memory.pass_facts = facts
        memory.quota_wake_at = min(
            (s.hours_free_at for s in limited.values() if s.hours_free_at is not None),
            default=None,
        )
        for job, reason in _unschedulable(state, inputs, result, unplaceable):
            record(tx, transitions.unschedulable(job, reason, now))
        started = [j for j in tx.jobs if j.state is JobState.RUNNING and j.node is not None]
        # A job this pass cancelled (--kill-on-invalid-dep) is a bad end its own
        # dependents must meet: the next pass sees it; each job ends once, so it stops.
        ended = any(j.state is JobState.CANCELLED for j in tx.jobs)
        await held.commit(tx, Effects(starts=started, kick=ended))
        for job in started:
            inputs.avoid.pop(job.id, None)  # placed: the --max-runtime rule served its turn
        # Jobs still waiting may stop lower-priority --preemptible ones.
        await preempting.preempt_for_waiting(held, memory, inputs, slots, pending, result)


def begun(memory: Memory, jobs: list[JobRecord], now: float) -> list[JobRecord]:
    """The jobs whose `--begin` time has come; the earliest still to come sets the
    loop's timer (a group shares its begin time, so its first member speaks for it)."""
    later = [j.spec.begin_at for j in jobs if j.spec.begin_at is not None and j.spec.begin_at > now]
    if not later:
        return jobs
    first = min(later)
    memory.begins_at = first if memory.begins_at is None else min(memory.begins_at, first)
    return [j for j in jobs if j.spec.begin_at is None or j.spec.begin_at <= now]


def _bounds(
    state: State, memory: Memory, inputs: PlacementInputs, slots: Sequence[NodeSlot]
) -> Callable[[JobRecord], int]:
    """How many jobs shaped like a given one a pass over `slots` could place at most."""
    queue = state.config.queue
    capacity = Capacity(
        slots, headroom_mb=queue.headroom_mb, max_cpu_jobs=queue.max_cpu_jobs_per_node
    )

    def bound(job: JobRecord) -> int:
        shaped = pending_of(state, memory, inputs, job)
        return capacity.bound(shaped.gpus, shaped.vram_mb)

    return bound


def _unschedulable(
    state: State, inputs: PlacementInputs, result: PlacementResult, unplaceable: set[int]
) -> Iterator[tuple[JobRecord, str]]:
    """The jobs no node could ever hold, with the reason: a grouped job's reason holds
    for every member of its group (the reason depends only on the shape)."""
    seen: set[int] = set()
    for bad in result.unschedulable:
        job = state.jobs[bad.job_id]
        if job.id in seen or _may_fit_unknown_node(state, inputs, job):
            continue
        group = state.index.pending.group_of(job.id)
        members = [job] if group is None else list(group.members.values())
        for member in members:
            seen.add(member.id)
            if member.id not in unplaceable:
                yield member, bad.reason


def _may_fit_unknown_node(state: State, inputs: PlacementInputs, job: JobRecord) -> bool:
    """A node that never reported its cards might hold anything: a job is only
    unschedulable once every node it could go to is known."""
    if inputs.pilots is not None and inputs.pilots.may_fit(job):
        return True  # a pilot Slurm starts on request could take it
    prefix = job.spec.node or ""
    return any(
        n.hello is None and not n.ignored and n.name.startswith(prefix)
        for n in state.nodes.values()
    )


# ------------------------------------------------------------ which jobs may start


async def dependency_states(state: State, jobs: Iterable[JobRecord]) -> dict[int, JobState]:
    """The states of the jobs' `--after`/`--after-any` prerequisites."""
    ids = {d for j in jobs for d in deps.prerequisites(j)}
    states = {i: state.jobs[i].state for i in ids if i in state.jobs}
    states.update(await state.store.states_of(ids - states.keys()))
    return states


def lane_statuses(state: State, dep_status: dict[int, deps.DepStatus]) -> list[lanes.LaneStatus]:
    by_lane: dict[str, list[JobRecord]] = defaultdict(list)
    for job in state.index.lanes.values():
        if job.spec.lane is not None:
            by_lane[job.spec.lane].append(job)
    return [
        lanes.lane_status(
            lane, jobs, paused=state.lane_paused.get(lane, False), dep_status=dep_status
        )
        for lane, jobs in sorted(by_lane.items())
    ]


_READY = deps.Ready()


def pending_for_placement(
    state: State,
    memory: Memory,
    inputs: PlacementInputs,
    candidates: Sequence[JobRecord],
    dep_status: dict[int, deps.DepStatus],
) -> list[PendingJob]:
    """What the placement pass may start: ready jobs outside lanes, each lane's head
    when its lane may move, less array members over their `%K`."""
    ready = [
        j
        for j in candidates
        if j.spec.lane is None and isinstance(dep_status.get(j.id, _READY), deps.Ready)
    ]
    heads = [state.jobs[s.next] for s in lane_statuses(state, dep_status) if s.next is not None]
    now = time.time()
    may_start = reserving.admitted(state, memory, begun(memory, [*ready, *heads], now), now)
    ordered = ordering.dispatch_order(may_start)
    running = state.index.running.values()
    return [pending_of(state, memory, inputs, j) for j in arrays.admit(ordered, running)]


def pending_of(state: State, memory: Memory, inputs: PlacementInputs, job: JobRecord) -> PendingJob:
    """`to_pending`, remembered while the job object stays the same: transitions
    replace a job's struct, so identity says nothing changed, and a long queue is
    not rebuilt field by field on every pass."""
    # Who submitted it decides whether a busy node may take it.
    fields = inputs.pending_fields(job)
    fields = {**fields, "account": state.usage.account(job)}
    if job.spec.in_place:
        fields = {**fields, "nodes": in_place_nodes(state.config, job.spec.cwd)}
    if state.reservations:  # which cards it may use: nvq.domain.reservations
        fields |= reserving.restriction(state, job, time_limit(job), time.time())
    cached = memory.pending_cache.get(job.id)
    if cached is not None and cached[0] is job and cached[1] == fields:
        return cached[2]
    pending = to_pending(job, **fields)
    memory.pending_cache[job.id] = (job, fields, pending)
    return pending


# ------------------------------------------------------------ the decision


def quota_after(
    limited: dict[str, Standing], ready: Sequence[PendingJob], result: PlacementResult
) -> dict[str, Standing]:
    """The limited users as this pass left them (what it placed counted in)."""
    if limited:
        user_of = {p.id: p.user for p in ready}
        for decision in result.placements:
            standing = limited.get(user_of.get(decision.job_id, ""))
            if standing is not None:
                standing.took(len(decision.gpus))
    return limited


def place_with_reservation(
    state: State,
    memory: Memory,
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    now: float,
    caps: Caps | None = None,
) -> PlacementResult:
    """`place`, with no starvation: see `nvq.domain.starvation`. Remembers the reservation
    (for `job show`)."""
    jobs = state.jobs
    running = [
        starvation.RunningJob(
            node=j.node,
            ends_at=(j.started_at or j.dispatched_at or now) + j.spec.timeout if j.spec.timeout else None,
        )
        for j in state.index.running.values()
        if j.node is not None
    ]
    queue = state.config.queue
    usage = fair_share_usage(state, pending, now)
    result, memory.reservation = starvation.place_fairly(
        slots,
        pending,
        # How long a job has waited is wall time since it was submitted, not its rank.
        waiting_since={p.id: jobs[p.id].created_at for p in pending},
        timeouts={p.id: jobs[p.id].spec.timeout for p in pending},
        running=running,
        now=now,
        starvation_after=queue.starvation_after,
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
        usage=usage,
        caps=caps,
    )
    memory.fair_share = usage
    placed = {p.job_id for p in result.placements}
    waiting = [p for p in pending if p.id not in placed]
    if memory.reservation is None and waiting:
        head = min(waiting, key=dispatch_key(usage))
        starves_at = jobs[head.id].created_at + queue.starvation_after
        memory.starves_at = starves_at if starves_at > now else None
    return result


def fair_share_usage(
    state: State, pending: Sequence[PendingJob], now: float
) -> dict[str, float] | None:
    """Each waiting account's usage over its share, when fair share is on and more
    than one account waits (one account's order is its own priority and submission
    order either way, so the usual single-user pass pays nothing)."""
    if not state.config.queue.fair_share:
        return None
    accounts = {p.account for p in pending}
    if len(accounts) < 2:
        return None
    running = state.index.running.values()
    return state.usage.standings(accounts, running, state.card_sizes, now)


def note_lane_blocks(
    memory: Memory, slots: Sequence[NodeSlot], pending: Sequence[PendingJob], result: PlacementResult
) -> None:
    """Remember why a ready lane head did not start: its card is full — of foreign
    work (`foreign`) or of the queue's own (`full`)."""
    placed = {p.job_id for p in result.placements}
    by_name = {s.name: s for s in slots}
    memory.lane_blocked = {}
    for job in pending:
        if job.gpu is None or job.id in placed or job.node is None:
            continue
        slot = by_name.get(job.node)
        card = next((g for g in slot.gpus if g.index == job.gpu), None) if slot else None
        reason = "foreign" if card is not None and card.foreign_mb > 0 else "full"
        if slot is not None and not slot.accepting:
            reason = "node not accepting"
        memory.lane_blocked[lanes.lane_name(job.node, job.gpu)] = reason


# ------------------------------------------------------------ explaining


def pass_facts(
    state: State,
    memory: Memory,
    inputs: PlacementInputs,
    slots: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    result: PlacementResult,
    dep_status: dict[int, deps.DepStatus],
) -> PassFacts:
    """What this pass saw, its placements on its nodes, to explain why jobs wait."""
    by_name = after_placements(slots, pending, result)
    queue = state.config.queue
    placed = {p.job_id for p in result.placements}
    standings = memory.fair_share if pending else None
    rivals = (
        fair_share.rivals(
            ((p.account, p.priority, p.created_at) for p in pending if p.id not in placed),
            standings,
        )
        if standings
        else {}
    )
    return PassFacts(
        nodes=[
            node_facts(
                n.name,
                # a stopped or ignored node is named as such (not "no node matches")
                n.shown_state if n.ignored else n.state,
                ready=n.reconciled and n.sample is not None,
                drained=n.drained,
                fenced=inputs.fenced(n.name),
                slot=by_name.get(n.name),
            )
            for n in state.nodes.values()
        ],
        considered={p.id for p in pending},
        placed=placed,
        dep_status=dep_status,
        reservation=memory.reservation,
        lane_paused=dict(state.lane_paused),
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
        fair_share=standings,
        rivals=rivals,
        shares={a: state.usage.share(a) for a in standings or ()},
        halflife=queue.fair_share_halflife,
    )
