"""`nvq job edit ID ...`: change what a waiting job waits for (`Edit`: --drop-after,
--add-after) or what a job asks for (`EditJob`). A waiting job takes any change a
submit would accept (and a job no node could ever run is refused, as at submit); a
running one only its name, note, tags and priority."""

from __future__ import annotations

from typing import Any

from nvq import control as c
from nvq.daemon.core.apply import apply, check_allowed
from nvq.daemon.core.errors import map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement import reserving
from nvq.daemon.placement.pinning import check_pin, into_lane
from nvq.daemon.placement.submit_checks import check_runnable
from nvq.domain import deps, job_edit, request, transitions
from nvq.domain.permissions import owner
from nvq.model import Job, JobRecord, JobState, Outcome


@handles(c.EditJob, may=owner("edit"))
async def edit_job(ctx: Context, req: c.EditJob, user: str) -> Job:
    state = ctx.state
    async with locked(state) as held:
        job = await state.get_job(req.id)
        check_allowed(state, [job], user, "edit")
        with map_exceptions():
            fields = job_edit.checked_changes(job, req.changes)
        if fields.get("reservation") is not None:  # one it may use, as at submit
            reserving.check_spec(state, request.replaced(job, fields).spec, job.user)
        if fields.get("node_request") is not None:
            check_pin(state, fields["node_request"])  # two nodes: refused, as at submit
        if fields.get("lane") is not None:
            placed = into_lane(state, request.replaced(job, fields).spec, job)
            fields |= {"lane": placed.spec.lane, "lane_pos": placed.lane_pos}
        if job.state is not JobState.RUNNING:
            check_runnable(state, ctx.memory, ctx.machines, request.replaced(job, fields))

        def change(one: JobRecord) -> Any:
            return job_edit.edit_fields(one, fields, by=user)

        changed = await apply(held, [job], change)
    return request.view_of(changed[0] if changed else job)


@handles(c.Edit, may=owner("edit"))
async def edit(ctx: Context, req: c.Edit, user: str) -> Job:
    state = ctx.state
    async with locked(state) as held:
        job = await state.get_job(req.id)
        check_allowed(state, [job], user, "edit")
        for dep in req.add_after:
            await state.get_job(dep)

        def waits_for(job_id: int) -> list[int]:
            # Only a job still waiting can hold anyone back for ever: a running or
            # ended one is past its prerequisites (the waiting ones are in memory).
            live = state.jobs.get(job_id)
            waiting = live is not None and live.state is not JobState.RUNNING
            return deps.prerequisites(live) if waiting and live else []

        def edit_one(job: JobRecord) -> Outcome:
            return transitions.edit_after(
                job, drop=req.drop_after, add=req.add_after, by=user, waits_for=waits_for
            )

        return request.view_of((await apply(held, [job], edit_one))[0])
