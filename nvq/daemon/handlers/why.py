"""Why a job waits: its reason in `job ls`/`job show` replies, and `job why`'s per-node
analysis (the placement pass's facts, checked constraint by constraint)."""

from __future__ import annotations

from typing import cast

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement.explain import waiting_of
from nvq.daemon.placement.placing import pass_facts, pending_of
from nvq.daemon.placement.slots import node_slots
from nvq.daemon.placement.start_times import FOR_CARDS, not_for_cards, start_estimates
from nvq.daemon.placement.waits import PassFacts, analyze_all, lane_block_of
from nvq.domain import request
from nvq.domain.permissions import ANYONE
from nvq.domain.placement import PlacementResult
from nvq.domain.start_estimate import StartEstimate
from nvq.model import Job, JobRecord, JobState

WAITING_STATES = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def with_reason(ctx: Context, job: JobRecord) -> Job:
    """The job as `job ls` sends it: a waiting one with its reason code in `reason`
    and the words in `reason_detail` (a reason stored earlier, such as why it was
    reassigned, is kept at the end of the words)."""
    if job.state not in WAITING_STATES:
        return request.view_of(job)
    waiting = waiting_of(ctx.state, ctx.memory, ctx.machines, job)
    if waiting is None:
        return request.view_of(job)
    detail = waiting.detail
    if job.state is JobState.PENDING and job.reason:
        detail = f"{detail}; {job.reason}"
    fields = request.fields_of(job)
    fields["reason"] = waiting.reason
    return c.JobRow(**fields, reason_detail=detail)


def rows_of(jobs: list[Job]) -> list[c.JobRow]:
    """`job ls`'s rows as sent: `with_reason` makes a JobRow only of a waiting job, and a
    plain Job is a JobRow on the wire (the row's own fields are optional), so the rest
    go as they are rather than be copied once per job on every listing."""
    return cast(list[c.JobRow], jobs)


async def with_starts(ctx: Context, rows: list[c.JobRow], user: str) -> None:
    """Each pending row `with_reason` made gets its estimated start: played forward for
    a job that waits for cards, "cannot be known" for one that waits on anything else."""
    pending = [r for r in rows if r.state is JobState.PENDING and isinstance(r, c.JobRow)]
    asked = [r.id for r in pending if r.reason in FOR_CARDS]
    found = await start_estimates(ctx.state, ctx.memory, ctx.machines, asked, user) if asked else {}
    for row in pending:
        if row.reason is not None:
            row.start_estimate = found.get(row.id) or not_for_cards(row.reason, row.begin_at)


async def estimated_start(
    ctx: Context, job: JobRecord, reason: str | None, user: str
) -> StartEstimate | None:
    if job.state is not JobState.PENDING or reason is None:
        return None
    if reason not in FOR_CARDS:
        return not_for_cards(reason, job.spec.begin_at)
    found = await start_estimates(ctx.state, ctx.memory, ctx.machines, [job.id], user)
    return found.get(job.id) or not_for_cards(reason, job.spec.begin_at)


def current_facts(ctx: Context) -> PassFacts:
    """The last pass's facts; before any pass, the nodes as they are now."""
    state = ctx.state
    last = ctx.memory.pass_facts
    if last is not None and last.nodes:
        return last
    empty = PlacementResult(placements=[], unschedulable=[])
    slots = node_slots(state, ctx.machines, ctx.memory.slot_cache)
    return pass_facts(state, ctx.memory, ctx.machines, slots, [], empty, {})


@handles(c.Why, may=ANYONE)
async def why(ctx: Context, req: c.Why, user: str) -> c.WhyReport:
    state = ctx.state
    job = state.live(await state.get_job(req.id))
    shown = with_reason(ctx, job)
    nodes = []
    if job.state in WAITING_STATES:
        facts = current_facts(ctx)
        block = lane_block_of(facts, job, state.jobs)
        nodes = analyze_all(facts, pending_of(state, ctx.memory, ctx.machines, job), block)
    report = c.WhyReport(
        id=job.id,
        state=str(job.state),
        reason=shown.reason,
        reason_detail=getattr(shown, "reason_detail", None),
        nodes=nodes,
        start_estimate=await estimated_start(ctx, job, shown.reason, user),
    )
    return report
