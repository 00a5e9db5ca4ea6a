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
from nvq.daemon.placement.waits import PassFacts, analyze_all, lane_block_of
from nvq.domain import request
from nvq.domain.permissions import ANYONE
from nvq.domain.placement import PlacementResult
from nvq.model import Job, JobRecord, JobState

WAITING_STATES = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def with_reason(ctx: Context, job: JobRecord) -> Job:
    """The job as `job ls` sends it: a waiting one with its reason code in `reason`
    and the words in `reason_detail` (a reason stored earlier, such as why it was
    reassigned, is kept at the end of the words)."""
    if job.state not in WAITING_STATES:
        return request.view_of(job)
    waiting = waiting_of(ctx.state, ctx.machines, job)
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


def current_facts(ctx: Context) -> PassFacts:
    """The last pass's facts; before any pass, the nodes as they are now."""
    state = ctx.state
    if state.pass_facts is not None and state.pass_facts.nodes:
        return state.pass_facts
    empty = PlacementResult(placements=[], unschedulable=[])
    return pass_facts(state, ctx.machines, node_slots(state, ctx.machines), [], empty, {})


@handles(c.Why, may=ANYONE)
async def why(ctx: Context, req: c.Why, user: str) -> c.WhyReport:
    state = ctx.state
    job = state.live(await state.get_job(req.id))
    shown = with_reason(ctx, job)
    nodes = []
    if job.state in WAITING_STATES:
        facts = current_facts(ctx)
        block = lane_block_of(facts, job, state.jobs)
        nodes = analyze_all(facts, pending_of(state, ctx.machines, job), block)
    report = c.WhyReport(
        id=job.id,
        state=str(job.state),
        reason=shown.reason,
        reason_detail=getattr(shown, "reason_detail", None),
        nodes=nodes,
    )
    return report
