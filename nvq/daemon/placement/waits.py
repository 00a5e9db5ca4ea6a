"""Why each waiting job waits, from the facts the last placement pass decided on.

The pass records what it saw (`PassFacts`: the nodes, which jobs its dependency, lane
and `%K` rules let through, what it placed); a job's reason is derived from them when
`job ls`, `job show` or `job why` asks, and remembered per request shape until the next
pass, so a 10,000-job array costs one per-node analysis, not 10,000."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from nvq.domain import deps, lanes, preemption, quotas
from nvq.domain import fair_share as fs
from nvq.domain import reservations as rsv
from nvq.domain import waiting as w
from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult, place
from nvq.domain.start_estimate import StartEstimate
from nvq.domain.starvation import Reservation
from nvq.model import JobRecord, JobState
from nvq.values import format_duration

_passes = itertools.count(1)


@dataclass
class PassFacts:
    """What one placement pass saw and decided."""

    nodes: list[w.NodeFacts] = field(default_factory=list)
    considered: set[int] = field(default_factory=set)  # ready jobs it tried to place
    placed: set[int] = field(default_factory=set)
    dep_status: dict[int, deps.DepStatus] = field(default_factory=dict)
    unplaceable: set[int] = field(default_factory=set)  # old attempt still stopping
    reservation: Reservation | None = None
    lane_paused: dict[str, bool] = field(default_factory=dict)
    headroom_mb: int = 0
    max_cpu_jobs: int = 0
    # Fair share (None when off or one account waits): standings, and per priority
    # the accounts the pass left waiting; what one share is, and the half-life.
    fair_share: dict[str, float] | None = None
    rivals: dict[int, list[fs.Rival]] = field(default_factory=dict)
    shares: dict[str, float] = field(default_factory=dict)
    halflife: float = 86400.0
    # Users' limits (`nvq.domain.quotas`): the limited users as the pass left them.
    quota: dict[str, quotas.Standing] = field(default_factory=dict)
    # Urgent jobs with a node kept for them: job → (node, the victims being stopped).
    holds: dict[int, tuple[str, list[int]]] = field(default_factory=dict)
    # `nvq reserve`: the reservations the pass placed around, by name.
    reservations: dict[str, rsv.CardReservation] = field(default_factory=dict)
    number: int = field(default_factory=lambda: next(_passes))
    # Filled on demand, until the next pass replaces these facts.
    by_shape: dict[PendingJob, w.Waiting] = field(default_factory=dict)
    lanes: dict[str, lanes.LaneStatus] | None = None
    arrays_running: dict[int, int] | None = None
    # Estimated starts (start_times.py), per reader: whose progress lines they rest on.
    starts: dict[str, dict[int, StartEstimate]] = field(default_factory=dict)


def after_placements(
    slots: Sequence[NodeSlot], pending: Sequence[PendingJob], result: PlacementResult
) -> dict[str, NodeSlot]:
    """Each node's slot with the pass's placements on it."""
    by_name = {s.name: s for s in slots}
    if result.placements:
        jobs = {p.id: p for p in pending}
        for placed in result.placements:
            slot, job = by_name.get(placed.node), jobs.get(placed.job_id)
            if slot is not None and job is not None:
                by_name[placed.node] = preemption.deduct(slot, placed, job)
    return by_name


def node_facts(
    name: str, state: str, *, ready: bool, drained: bool, fenced: bool, slot: NodeSlot | None
) -> w.NodeFacts:
    """A node as the analysis sees it: up but not yet reconciled (or without a first
    sample) counts as still connecting, since placement will not use it yet."""
    shown = "connecting" if state == "up" and not ready else state
    return w.NodeFacts(name=name, state=shown, drained=drained, fenced=fenced, slot=slot)


def analyze_all(facts: PassFacts, job: PendingJob, lane_block: str | None) -> list[w.NodeFit]:
    return [
        w.analyze(
            job,
            node,
            headroom_mb=facts.headroom_mb,
            max_cpu_jobs=facts.max_cpu_jobs,
            lane_block=lane_block,
        )
        for node in facts.nodes
    ]


def reason_of(
    facts: PassFacts | None,
    job: JobRecord,
    pending: PendingJob | None,
    live: dict[int, JobRecord],
) -> w.Waiting | None:
    """Why `job` (pending, held or paused) is not running; None for other states or
    before the first pass. `pending` is the job as placement sees it."""
    if job.state is JobState.PAUSED:
        return w.Waiting(w.PAUSED, job.reason or "paused")
    if job.state is JobState.HELD:
        detail = (job.reason or "a prerequisite ended badly").removeprefix("held: ")
        return w.Waiting(w.HELD, f"{detail}; `nvq job release {job.id}` runs it anyway")
    if job.state is not JobState.PENDING or facts is None or pending is None:
        return None
    if job.spec.begin_at is not None and job.spec.begin_at > time.time():
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.spec.begin_at))
        return w.Waiting(w.BEGIN_TIME, f"--begin: not before {stamp}")
    if job.id in facts.unplaceable:
        # (or a prerequisite's last artifacts, its $NVQ_INPUTS, are still being synced)
        return w.Waiting(w.STOPPING, "its previous attempt, or a prerequisite's last "
                         "artifacts, are still being stopped or synced")
    kept = facts.holds.get(job.id)
    if kept is not None:
        node, victims = kept
        ids = ", ".join(map(str, victims))
        jobs = "job" if len(victims) == 1 else "jobs"
        detail = f"preempting {jobs} {ids} on {node}: it starts there once they stopped"
        return w.Waiting(w.PREEMPTING, detail)
    status = facts.dep_status.get(job.id)
    if isinstance(status, deps.Waiting):
        on = live.get(status.on)
        kind = "complete" if status.on in job.spec.after else "end"
        state = f" ({on.state})" if on is not None else ""
        return w.Waiting(w.DEPENDENCY, f"waits for job {status.on}{state} to {kind}")
    lane_block = lane_block_of(facts, job, live)
    if lane_block is not None:
        return w.Waiting(w.LANE, lane_block)
    standing = facts.quota.get(job.user)
    if standing is not None and job.id not in facts.placed:
        cards = 1 if pending.gpu is not None else pending.gpus
        held = standing.blocks(cards)
        if held is not None:
            return w.Waiting(held, quota_detail(standing, held, cards))
    booked = reservation_wait(facts, job, pending)
    if booked is not None:
        return booked
    if job.id not in facts.considered and job.array_limit is not None:
        running = array_running(facts, live).get(job.array_id or 0, 0)
        if running >= job.array_limit:
            detail = f"array {job.array_id}: {running} of at most {job.array_limit} running"
            return w.Waiting(w.ARRAY_LIMIT, detail)
    reserved = facts.reservation
    reserved_for = (reserved.job_id, reserved.node) if reserved else None
    if reserved_for is not None and reserved_for[0] == job.id:
        # The holder of the reservation is the one job its shape does not speak for.
        return w.summarize(pending, analyze_all(facts, pending, None), reserved_for=reserved_for)
    shape = _shape(pending)
    cached = facts.by_shape.get(shape)
    if cached is None:
        fits = analyze_all(facts, pending, None)
        cached = facts.by_shape[shape] = w.summarize(pending, fits, reserved_for=reserved_for)
    if cached.reason in (w.PRIORITY, w.RESOURCES):
        return fair_share_wait(facts, pending) or cached
    return cached


def reservation_wait(facts: PassFacts, job: JobRecord, pending: PendingJob) -> w.Waiting | None:
    """`Reservation`: a `--reservation` job outside its window or with no room on its
    cards, or another job that only reserved cards could take now."""
    if job.id in facts.placed:
        return None
    now = time.time()
    if job.spec.reservation is not None:
        res = facts.reservations.get(job.spec.reservation)
        why = rsv.waiting_for(res, job.spec.reservation, now)
        if why is None and res is not None:
            why = f"the cards of reservation {res.name} ({','.join(res.cards)}) have no room now"
        return w.Waiting(w.RESERVATION, why or "")
    if not pending.closed:
        return None
    slots = [n.slot for n in facts.nodes if n.slot is not None and n.slot.accepting]
    free = msgspec.structs.replace(pending, closed=frozenset())
    fits = place(slots, [free], headroom_mb=facts.headroom_mb, max_cpu_jobs=facts.max_cpu_jobs)
    if not fits.placements:
        return None
    taken = {(fits.placements[0].node, g) for g in fits.placements[0].gpus}
    names = sorted(
        r.name for r in facts.reservations.values() if rsv.card_set(r) & taken
    )
    limit = (
        "an untimed job"
        if pending.time_limit is None
        else f"its time limit {format_duration(pending.time_limit)}"
    )
    detail = f"the cards with room are reserved ({', '.join(names)}), and {limit} would reach it"
    return w.Waiting(w.RESERVATION, detail)


def quota_detail(standing: quotas.Standing, reason: str, gpus: int) -> str:
    detail = standing.detail(reason, gpus)
    if reason == quotas.QUOTA_HOURS and standing.hours_free_at is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(standing.hours_free_at))
        detail += f"; under it again by {stamp}"
    return detail


def fair_share_wait(facts: PassFacts, job: PendingJob) -> w.Waiting | None:
    """`FairShare` when jobs of an account that used less lately go first."""
    standings = facts.fair_share
    if standings is None:
        return None
    rival = fs.ahead_by_share(job.account, job.priority, job.created_at, facts.rivals, standings)
    if rival is None:
        return None

    def used(account: str) -> str:
        share = facts.shares.get(account, 1.0)
        hours = fs.gpu_hours(standings.get(account, 0.0) * share)
        return hours if share == 1.0 else f"{hours} (share {share:g})"

    detail = (
        f"{job.account} has used {used(job.account)} GPU-h lately "
        f"(half-life {_span(facts.halflife)}), {rival.account} {used(rival.account)}: "
        f"{rival.account} goes first"
    )
    return w.Waiting(w.FAIR_SHARE, detail)


def _span(seconds: float) -> str:
    """A half-life as written in config.toml: 1d, 12h, 90m."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return format_duration(seconds)


def _shape(job: PendingJob) -> PendingJob:
    # Everything but which job and when: jobs alike in what they ask wait for the same
    # reason.
    return PendingJob(
        id=0,
        priority=0,
        created_at=0.0,
        gpus=job.gpus,
        vram_mb=job.vram_mb,
        node=job.node,
        cuda=job.cuda,
        memory_mb=job.memory_mb,
        image=job.image,
        gpu=job.gpu,
        user=job.user,
        forbid_busy=job.forbid_busy,
        whole=job.whole,
        quiet=job.quiet,
    )


def array_running(facts: PassFacts, live: dict[int, JobRecord]) -> dict[int, int]:
    """Running members per array (one sweep per pass, not one per waiting member)."""
    if facts.arrays_running is None:
        counts: dict[int, int] = defaultdict(int)
        for j in live.values():
            if j.array_id is not None and j.state is JobState.RUNNING:
                counts[j.array_id] += 1
        facts.arrays_running = dict(counts)
    return facts.arrays_running


def lane_statuses(facts: PassFacts, live: dict[int, JobRecord]) -> dict[str, lanes.LaneStatus]:
    if facts.lanes is None:
        by_lane: dict[str, list[JobRecord]] = defaultdict(list)
        for j in live.values():
            if j.spec.lane is not None:
                by_lane[j.spec.lane].append(j)
        facts.lanes = {
            lane: lanes.lane_status(
                lane, jobs, paused=facts.lane_paused.get(lane, False), dep_status=facts.dep_status
            )
            for lane, jobs in by_lane.items()
        }
    return facts.lanes


def lane_block_of(facts: PassFacts, job: JobRecord, live: dict[int, JobRecord]) -> str | None:
    """Why the job's lane does not let it start, or None when it is the lane's head
    and the lane may move (cards permitting), or it is in no lane."""
    if job.spec.lane is None:
        return None
    st = lane_statuses(facts, live).get(job.spec.lane)
    if st is None:
        return None
    pos = st.queue.index(job.id) + 1 if job.id in st.queue else 0
    where = f"lane {job.spec.lane}, position {pos} of {len(st.queue)}"
    if st.running is not None:
        return f"{where}; job {st.running} runs on the lane now"
    if st.next == job.id:
        return None
    if st.blocked is not None:
        return f"{where}; blocked: {st.blocked}"
    if st.queue and st.queue[0] != job.id:
        return f"{where}; job {st.queue[0]} goes first"
    return f"{where}; the lane is paused"
