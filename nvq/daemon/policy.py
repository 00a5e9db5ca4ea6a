"""The daemon's side of the scheduling policy (issue 4): shaping submissions
(arrays, lanes, CUDA/memory), what placement sees, and the requests that reorder,
pause and requeue jobs. Decisions come from the pure modules (`nvq.domain.ordering`,
`nvq.domain.arrays`, `nvq.domain.lanes`, `nvq.domain.permissions`, `nvq.domain.transitions`); this applies them,
each change one `Store.commit`, under the core's lock."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from nvq.domain import arrays, deps, lanes, ordering, permissions, starvation, transitions
from nvq.domain.matching import memory_free, node_cuda, parse_cuda
from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult
from nvq.domain.transitions import TransitionError
from nvq.model import Job, JobSpec, JobState, Tx

if TYPE_CHECKING:
    from nvq.daemon.core import Core
    from nvq.daemon.nodes import NodeRuntime

WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def _error(message: str) -> Exception:
    from nvq.daemon.core import RequestError  # core imports this module

    return RequestError(message)


# ------------------------------------------------------------ placement inputs


def node_matching(node: NodeRuntime, on_node: Sequence[Job]) -> dict[str, Any]:
    """NodeSlot's matching fields: driver CUDA version and host memory."""
    hello = node.hello
    if hello is None:
        return {}
    promised = sum(j.memory_mb for j in on_node)
    sample_free = node.sample.mem_free_mb if node.sample else None
    return {
        "cuda": node_cuda(hello.cuda),
        "memory_total_mb": hello.mem_total_mb or None,
        "memory_free_mb": memory_free(hello.mem_total_mb or None, sample_free, promised),
    }


def to_pending(job: Job, **extra: Any) -> PendingJob:
    """The job as placement sees it; `extra` fills the fields other modules own
    (who may use a busy node) without building the struct twice."""
    lane_node, lane_gpu = (None, None)
    if job.lane is not None:
        lane_node, lane_gpu = lanes.parse_lane(job.lane)
    return PendingJob(
        id=job.id,
        priority=job.priority,
        created_at=job.rank or job.created_at,
        gpus=1 if lane_gpu is not None else job.gpus_requested,
        vram_mb=job.vram_mb,
        node=lane_node if lane_node is not None else job.node_request,
        cuda=parse_cuda(job.cuda) if job.cuda else None,
        memory_mb=job.memory_mb,
        gpu=lane_gpu,
        **extra,
    )


def lane_statuses(core: Core, dep_status: dict[int, deps.DepStatus]) -> list[lanes.LaneStatus]:
    by_lane: dict[str, list[Job]] = defaultdict(list)
    for job in core.jobs.values():
        if job.lane is not None:
            by_lane[job.lane].append(job)
    return [
        lanes.lane_status(
            lane, jobs, paused=core.lane_paused.get(lane, False), dep_status=dep_status
        )
        for lane, jobs in sorted(by_lane.items())
    ]


_READY = deps.Ready()


def pending_for_placement(
    core: Core, candidates: Sequence[Job], dep_status: dict[int, deps.DepStatus]
) -> list[PendingJob]:
    """What the placement pass may start: ready jobs outside lanes, each lane's head
    when its lane may move, less array members over their `%K`."""
    ready = [
        j
        for j in candidates
        if j.lane is None and isinstance(dep_status.get(j.id, _READY), deps.Ready)
    ]
    heads = [core.jobs[s.next] for s in lane_statuses(core, dep_status) if s.next is not None]
    ordered = ordering.dispatch_order([*ready, *heads])
    running = [j for j in core.jobs.values() if j.state is JobState.RUNNING]
    return [_pending_of(core, j) for j in arrays.admit(ordered, running)]


def _pending_of(core: Core, job: Job) -> PendingJob:
    """`to_pending`, remembered while the job object stays the same: transitions
    replace a job's struct, so identity says nothing changed, and a long queue is
    not rebuilt field by field on every pass."""
    # Who submitted it decides whether a busy node may take it (nvq.daemon.machines).
    fields = core.machines.pending_fields(job)
    cached = core.pending_cache.get(job.id)
    if cached is not None and cached[0] is job and cached[1] == fields:
        return cached[2]
    pending = to_pending(job, **fields)
    core.pending_cache[job.id] = (job, fields, pending)
    return pending


def place_with_reservation(
    core: Core, slots: Sequence[NodeSlot], pending: Sequence[PendingJob], now: float
) -> PlacementResult:
    """`place`, with no starvation: see `nvq.domain.starvation`. Remembers the reservation
    (for `job show`)."""
    jobs = core.jobs
    running = [
        starvation.RunningJob(
            node=j.node,
            ends_at=(j.started_at or j.dispatched_at or now) + j.timeout if j.timeout else None,
        )
        for j in jobs.values()
        if j.state is JobState.RUNNING and j.node is not None
    ]
    queue = core.config.queue
    result, core.reservation = starvation.place_fairly(
        slots,
        pending,
        waiting_since={p.id: jobs[p.id].rank or jobs[p.id].created_at for p in pending},
        timeouts={p.id: jobs[p.id].timeout for p in pending},
        running=running,
        now=now,
        starvation_after=queue.starvation_after,
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
    )
    return result


def note_lane_blocks(
    core: Core, slots: Sequence[NodeSlot], pending: Sequence[PendingJob], result: PlacementResult
) -> None:
    """Remember why a ready lane head did not start: its card is full — of foreign
    work (`foreign`) or of the queue's own (`full`)."""
    placed = {p.job_id for p in result.placements}
    by_name = {s.name: s for s in slots}
    core.lane_blocked = {}
    for job in pending:
        if job.gpu is None or job.id in placed or job.node is None:
            continue
        slot = by_name.get(job.node)
        card = next((g for g in slot.gpus if g.index == job.gpu), None) if slot else None
        reason = "foreign" if card is not None and card.foreign_mb > 0 else "full"
        if slot is not None and not slot.accepting:
            reason = "node not accepting"
        core.lane_blocked[lanes.lane_name(job.node, job.gpu)] = reason


# ------------------------------------------------------------ submit


async def shape_submission(core: Core, spec: JobSpec, job: Job) -> list[Job]:
    """Validate the policy options of a submit and turn it into the rows to insert
    (one, or one per array index). Must hold the core's lock (array ids are taken
    from the store's sequence)."""
    if spec.retries < 0:
        raise _error("--retries must be 0 or more")
    if spec.memory_mb < 0:
        raise _error("--memory must not be negative")
    if spec.cuda is not None:
        try:
            parse_cuda(spec.cuda)
        except ValueError as exc:
            raise _error(f"--cuda: {exc}") from None
    if spec.lane is not None:
        job = _into_lane(core, spec, job)
    if spec.array is None:
        return [job]
    try:
        spec_array = arrays.parse_array(spec.array)
    except ValueError as exc:
        raise _error(str(exc)) from None
    members = arrays.expand(job, spec_array, await core.store.next_job_id())
    if job.lane_pos is not None:
        for n, member in enumerate(members):
            member.lane_pos = job.lane_pos + n
    return members


def _into_lane(core: Core, spec: JobSpec, job: Job) -> Job:
    try:
        prefix, gpu = lanes.parse_lane(spec.lane or "")
    except lanes.LaneError as exc:
        raise _error(f"--lane: {exc}") from None
    if spec.node is not None:
        raise _error("give --lane or --node, not both: a lane names its node")
    if spec.gpus != 1:
        raise _error("a lane job runs on exactly its lane's one GPU: drop --gpus")
    node = core.find_node(prefix)
    if node.hello is not None and gpu not in {g.index for g in node.hello.gpus}:
        have = ", ".join(str(g.index) for g in node.hello.gpus) or "none"
        raise _error(f"--lane {spec.lane}: node {node.name} has no GPU {gpu} (GPUs: {have})")
    name = lanes.lane_name(node.name, gpu)
    queued = lanes.queued_order([j for j in core.jobs.values() if j.lane == name])
    last = max((j.lane_pos or 0.0 for j in queued), default=0.0)
    return msgspec.structs.replace(job, lane=name, lane_pos=last + 1.0)


# ------------------------------------------------------------ requests


async def _jobs(
    core: Core, ids: Iterable[int], array: bool, states: frozenset[JobState]
) -> list[Job]:
    """The jobs a request names: `ids` themselves, or with `array` every member of
    those arrays in `states`."""
    if not array:
        return [await core.get_job(i) for i in ids]
    out: list[Job] = []
    for array_id in ids:
        members = await core.store.array_members(array_id)
        if not members:
            raise _error(f"no array with id {array_id}")
        out.extend(core.live(m) for m in members if core.live(m).state in states)
    return out


def _check(core: Core, jobs: Sequence[Job], user: str, action: str) -> None:
    try:
        permissions.check(jobs, user, core.config.queue.admins, action)
    except TransitionError as exc:
        raise _error(str(exc)) from None


async def cancel_ids(core: Core, ids: list[int], array: bool) -> list[int]:
    if not array:
        return ids
    return [j.id for j in await _jobs(core, ids, True, WAITING)]


async def requeue(core: Core, ids: list[int], user: str, now: float) -> list[Job]:
    async with core._lock:
        jobs = [await core.get_job(i) for i in ids]
        _check(core, jobs, user, "requeue")
        tx = Tx()
        for job in jobs:
            try:
                new, evs = transitions.requeue(job, by=user, now=now)
            except TransitionError as exc:
                raise _error(str(exc)) from None
            assert new is not None
            if new.lane is not None:
                queued = lanes.queued_order([j for j in core.jobs.values() if j.lane == new.lane])
                new.lane_pos = max((j.lane_pos or 0.0 for j in queued), default=0.0) + 1.0
            tx.jobs.append(new)
            tx.events.extend(evs)
        await core._commit(tx)
    core.kick()
    return tx.jobs


async def purge(core: Core, before: float | None, user: str) -> dict[str, Any]:
    async with core._lock:
        ids = await core.store.finished_ids(before)
        if ids and user not in core.config.queue.admins:
            mine = await core.store.jobs(ids=ids)
            ids = [j.id for j in mine if j.user == user]
        tx = Tx(delete_jobs=ids)
        if ids:
            from nvq.model import NewEvent

            tx.events.append(
                NewEvent(
                    "jobs_purged", None, None, {"count": len(ids), "by": user, "before": before}
                )
            )
            await core._commit(tx)
            core.machines.artifacts.delete(ids)  # their checkpoints go with them
    core.kick()  # a purged prerequisite no longer holds anyone back
    return {"purged": len(ids), "ids": ids}


async def edit(core: Core, job_id: int, drop: list[int], add: list[int], user: str) -> Job:
    async with core._lock:
        job = await core.get_job(job_id)
        _check(core, [job], user, "edit")
        for dep in add:
            await core.get_job(dep)
        try:
            new, evs = transitions.edit_after(job, drop=drop, add=add, by=user)
        except TransitionError as exc:
            raise _error(str(exc)) from None
        assert new is not None
        await core._commit(Tx(jobs=[new], events=evs))
    core.kick()
    return new


async def priority(
    core: Core,
    ids: list[int],
    *,
    array: bool,
    change: str | None,
    up: int | None,
    user: str,
) -> list[Job]:
    """Set/adjust the priority (`change`), or move `up` places (negative: down)."""
    async with core._lock:
        jobs = await _jobs(core, ids, array, WAITING)
        _check(core, jobs, user, "re-prioritise")
        tx = Tx()
        pending = [ordering.key_of(j) for j in core.jobs.values() if j.state is JobState.PENDING]
        for job in jobs:
            try:
                if change is not None:
                    prio, rank = ordering.new_priority(job.priority, change), job.rank
                else:
                    prio, rank = ordering.move(pending, job.id, up or 0)
                    pending = [k for k in pending if k.id != job.id]
                    pending.append(ordering.Key(job.id, prio, rank))
                new, evs = transitions.reorder(job, priority=prio, rank=rank, by=user)
            except (ValueError, TransitionError) as exc:
                raise _error(str(exc)) from None
            assert new is not None
            tx.jobs.append(new)
            tx.events.extend(evs)
        await core._commit(tx)
    core.kick()
    return tx.jobs


async def pause(core: Core, ids: list[int], *, array: bool, user: str, now: float) -> list[Job]:
    async with core._lock:
        jobs = await _jobs(core, ids, array, frozenset({JobState.PENDING, JobState.HELD}))
        _check(core, jobs, user, "pause")
        tx = Tx()
        for job in jobs:
            try:
                new, evs, reap = transitions.pause(job, by=user, now=now)
            except TransitionError as exc:
                raise _error(str(exc)) from None
            tx.jobs.append(new)
            tx.events.extend(evs)
            if reap is not None:
                tx.add_reaps.append(reap)
        await core._commit(tx)
        core.post_kills(tx.add_reaps)
    core.kick()
    return tx.jobs


async def resume(core: Core, ids: list[int], *, array: bool, user: str) -> list[Job]:
    async with core._lock:
        jobs = await _jobs(core, ids, array, frozenset({JobState.PAUSED}))
        _check(core, jobs, user, "resume")
        tx = Tx()
        for job in jobs:
            try:
                new, evs = transitions.resume(job, by=user)
            except TransitionError as exc:
                raise _error(str(exc)) from None
            assert new is not None
            tx.jobs.append(new)
            tx.events.extend(evs)
        await core._commit(tx)
    core.kick()
    return tx.jobs


async def list_array(core: Core, array_id: int) -> list[Job]:
    members = await core.store.array_members(array_id)
    if not members:
        raise _error(f"no array with id {array_id}")
    return [core.live(m) for m in members]


# ------------------------------------------------------------ explaining


async def explain(core: Core, job: Job) -> str | None:
    """Why a job that is not running is where it is, in words (for `job show`)."""
    if job.state is JobState.HELD:
        states = await core._dependency_states([job])
        dead = deps.dead_prerequisites(job, states)
        parts = [f"prerequisite {d} ended {states[d]}" for d in dead if d in states]
        what = "; ".join(parts) or (job.reason or "held")
        ids = ",".join(map(str, dead)) or "N"
        return (
            f"held: {what}. `nvq job release {job.id}` runs it without it; "
            f"`nvq job edit {job.id} --drop-after {ids} --add-after M` re-attaches it; "
            f"`nvq job cancel {job.id}` ends it"
        )
    if job.state is JobState.PAUSED:
        return f"{job.reason or 'paused'}; `nvq job resume {job.id}` puts it back in line"
    if job.state is not JobState.PENDING:
        return None
    status = deps.dependency_status(job, await core._dependency_states([job]))
    if isinstance(status, deps.Waiting):
        kind = "complete" if status.on in job.after else "end"
        return f"waiting for job {status.on} to {kind}"
    if job.lane is not None:
        st = next((s for s in lane_statuses(core, {}) if s.lane == job.lane), None)
        if st is not None:
            pos = st.queue.index(job.id) + 1 if job.id in st.queue else None
            where = f"lane {job.lane}, position {pos} of {len(st.queue)}"
            if st.paused:
                return f"{where}; the lane is paused"
            if st.running is not None:
                return f"{where}; job {st.running} runs on the lane now"
            if st.blocked or job.lane in core.lane_blocked:
                return f"{where}; blocked: {st.blocked or core.lane_blocked[job.lane]}"
            return where
    if job.array_id is not None and job.array_limit is not None:
        running = sum(
            1
            for j in core.jobs.values()
            if j.array_id == job.array_id and j.state is JobState.RUNNING
        )
        if running >= job.array_limit:
            return f"array {job.array_id}: {running} of at most {job.array_limit} members running"
    reservation = core.reservation
    if reservation is not None and reservation.job_id == job.id:
        when = "when its running jobs end (they have no --timeout)"
        if reservation.ready_at is not None:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(reservation.ready_at))
            when = f"expected free by {stamp}"
        return (
            f"waiting on a reservation of node {reservation.node} ({when}): it has waited "
            "longer than starvation_after, so smaller jobs may use that node only if "
            "their --timeout ends before then"
        )
    return "waiting for a node with room"
