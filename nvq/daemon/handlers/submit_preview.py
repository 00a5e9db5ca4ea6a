"""`job submit --dry-run`: where a job would start now, or why it would wait, for a
job that is checked like any submit but never stored. The answer is `job why`'s
analysis (the last placement pass's facts, node by node) for a job that does not
exist, and the placement itself for where it would go."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.placement.pending_view import in_place_nodes, to_pending
from nvq.daemon.placement.placing import pass_facts
from nvq.daemon.placement.slots import node_slots
from nvq.daemon.placement.waits import PassFacts, analyze_all, lane_statuses
from nvq.domain import request
from nvq.domain import waiting as w
from nvq.domain.placement import NodeSlot, PendingJob, PlacementResult, place
from nvq.model import JobRecord


async def preview(ctx: Context, jobs: list[JobRecord], unreported: list[str]) -> c.SubmitPreview:
    """`jobs`: the rows the submit would insert (one, or an array's members, with the
    ids they would get); the first stands for them all."""
    state, machines = ctx.state, ctx.machines
    job = jobs[0]
    fields = machines.pending_fields(job)
    if job.spec.in_place:
        fields = {**fields, "nodes": in_place_nodes(state.config, job.spec.cwd)}
    pending = to_pending(job, **fields)
    # The nodes as they are now (the last pass's facts predate what it started).
    slots = node_slots(state, machines, ctx.memory.slot_cache)
    last = ctx.memory.pass_facts
    empty = PlacementResult(placements=[], unschedulable=[])
    facts = pass_facts(
        state, ctx.memory, machines, slots, [], empty, last.dep_status if last else {}
    )
    lane_block = _lane_block(facts, job, state.jobs)
    fits = analyze_all(facts, pending, lane_block)
    answer = c.SubmitPreview(count=len(jobs), job=request.view_of(job), nodes=fits, unreported=unreported)
    dep = await _first_unfinished(ctx, job)
    if dep is not None:
        answer.reason, answer.reason_detail = w.DEPENDENCY, dep
        return answer
    if lane_block is not None:
        answer.reason, answer.reason_detail = w.LANE, lane_block
        return answer
    where = _placement(ctx, slots, pending)
    reserved = facts.reservation
    if where is not None and (reserved is None or reserved.node != where[0]):
        answer.would_start, (answer.node, answer.gpus) = True, where
        return answer
    reserved_for = (reserved.job_id, reserved.node) if reserved is not None else None
    why = w.summarize(pending, fits, reserved_for=reserved_for)
    answer.reason, answer.reason_detail = why.reason, why.detail
    return answer


def _placement(
    ctx: Context, slots: list[NodeSlot], pending: PendingJob
) -> tuple[str, list[int]] | None:
    """Where the placement would start it on the nodes as they are now."""
    queue = ctx.state.config.queue
    result = place(
        slots,
        [pending],
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
    )
    return (result.placements[0].node, result.placements[0].gpus) if result.placements else None


def _lane_block(facts: PassFacts, job: JobRecord, live: dict[int, JobRecord]) -> str | None:
    """Why appending to the job's lane would not start it at once: the lane runs or
    holds other jobs first, or is paused."""
    if job.spec.lane is None:
        return None
    st = lane_statuses(facts, live).get(job.spec.lane)
    if st is None:
        return None
    where = f"lane {job.spec.lane}, it would be position {len(st.queue) + 1} of {len(st.queue) + 1}"
    if st.paused:
        return f"{where}; the lane is paused"
    if st.running is not None:
        return f"{where}; job {st.running} runs on the lane now"
    if st.queue:
        return f"{where}; job {st.queue[0]} goes first"
    return None


async def _first_unfinished(ctx: Context, job: JobRecord) -> str | None:
    for dep in [*job.spec.after, *job.spec.after_any]:
        other = ctx.state.live(await ctx.state.get_job(dep))
        if not other.state.finished:
            kind = "complete" if dep in job.spec.after else "end"
            return f"waits for job {dep} ({other.state}) to {kind}"
    return None
