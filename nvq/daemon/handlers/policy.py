"""`nvq job cancel|release|requeue|priority|pause|resume`: moving jobs through their
states or along the line. Each one locks, finds the jobs (those named, or those its
selectors choose: `--user`, `--mine`, `--state`, `--tag`), and applies one pure
transition to them (`nvq.daemon.core.apply`)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from nvq import control as c
from nvq.daemon.core.apply import apply, check_allowed, queue_admins
from nvq.daemon.core.errors import USER_ERRORS, BadRequest, map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.core.later import unless_disk_full
from nvq.daemon.core.state import LIVE_STATES, State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement.pinning import lane_tail
from nvq.daemon.placement.placing import dependency_states
from nvq.domain import deps, ordering, request, selection, transitions
from nvq.domain import requeue as requeueing
from nvq.domain.permissions import owner
from nvq.domain.transitions import TransitionError
from nvq.model import Job, JobRecord, JobState, Outcome

WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})
# The states each bulk action takes a job in (a selection skips the rest).
CANCELLABLE = LIVE_STATES
RELEASABLE = frozenset({JobState.HELD})
RESUMABLE = frozenset({JobState.PAUSED})


async def named_jobs(
    state: State, ids: Iterable[int], array: bool, states: frozenset[JobState]
) -> list[JobRecord]:
    """The jobs a request names: `ids` themselves, or with `array` every member of
    those arrays in `states`."""
    if not array:
        return [await state.get_job(i) for i in ids]
    out: list[JobRecord] = []
    for array_id in ids:
        members = await state.store.array_members(array_id)
        if not members:
            raise BadRequest(f"no array with id {array_id}")
        out.extend(state.live(m) for m in members if state.live(m).state in states)
    return out


async def chosen_jobs(
    state: State,
    ids: list[int],
    *,
    array: bool,
    select: c.JobSelection | None,
    user: str,
    action: str,
    states: frozenset[JobState],
) -> list[JobRecord]:
    """The jobs a request acts on: the ones it names (`named_jobs`), narrowed by its
    selectors; with selectors and no ids, the live jobs they choose of those `user`
    may change (`nvq.domain.selection`)."""
    if select is None:
        return await named_jobs(state, ids, array, states)
    if not ids:
        if array:
            raise BadRequest("--array takes array ids: give one")
        pool = list(state.jobs.values())
    else:
        pool = await named_jobs(state, ids, array, states)
    with map_exceptions({**USER_ERRORS, ValueError: BadRequest}):
        return selection.select(
            pool, user=select.user, mine=select.mine, states=select.states, tag=select.tag,
            asker=user, admins=queue_admins(state), action=action, applies_to=states,
            named=bool(ids),
        )


@handles(c.Cancel, may=owner("cancel"))
async def cancel(ctx: Context, req: c.Cancel, user: str) -> list[Job]:
    """The cancelled jobs; while the queue host's disk is full, at once the jobs as they
    stand (not yet cancelled), the cancel landing when the disk has room."""
    state, now = ctx.state, time.time()
    # With --array: every member not yet running.
    named = await chosen_jobs(
        state, req.ids, array=req.array, select=req.select, user=user, action="cancel",
        states=WAITING if req.array else CANCELLABLE,
    )
    ids = [j.id for j in named]
    if not ids:
        return []

    def cancel_one(job: JobRecord) -> Outcome:
        return transitions.cancel(job, now=now, by=user)

    # Refused now or never: a cancel that may be left to land later must be sound
    # before it is answered (reads go on while the disk is full).
    jobs = [await state.get_job(i) for i in ids]
    check_allowed(state, jobs, user, "cancel")
    with map_exceptions():
        for job in jobs:
            cancel_one(job)

    async def write() -> list[JobRecord]:
        async with locked(state) as held:
            jobs = [await state.get_job(i) for i in ids]
            if req.select is not None:  # a selected job that ended meanwhile is not refused
                jobs = [j for j in jobs if not j.state.finished]
            return await apply(held, jobs, cancel_one, by=user, action="cancel")

    what = f"cancel of {', '.join(map(str, ids))} by {user}"
    cancelled = await unless_disk_full(state.later, state.store, write, what)
    return [request.view_of(j) for j in (jobs if cancelled is None else cancelled)]


@handles(c.Release, may=owner("release"))
async def release(ctx: Context, req: c.Release, user: str) -> list[Job]:
    state = ctx.state
    async with locked(state) as held:
        jobs = await chosen_jobs(
            state, req.ids, array=False, select=req.select, user=user, action="release",
            states=RELEASABLE,
        )
        states = await dependency_states(state, jobs)

        def release_one(job: JobRecord) -> Outcome:
            return transitions.release(job, deps.dead_prerequisites(job, states), by=user)

        return [request.view_of(j) for j in await apply(held, jobs, release_one)]


@handles(c.Requeue, may=owner("requeue"))
async def requeue(ctx: Context, req: c.Requeue, user: str) -> list[c.Requeued]:
    state, now = ctx.state, time.time()
    if req.command is not None and len(req.ids) != 1:
        raise BadRequest("a new command is for one job: give one id with --edit")
    async with locked(state) as held:
        jobs = [await state.get_job(i) for i in req.ids]
        # The back of the line is the next number of the dispatch sequence (a job
        # submitted later gets it too, and its higher id puts it behind).
        back = float(await state.store.next_job_id())
        modes: dict[int, str] = {}

        def requeue_one(job: JobRecord) -> Outcome:
            outcome = requeueing.requeue(
                job, by=user, now=now, artifacts=req.artifacts, command=req.command
            )
            modes[job.id] = outcome.events[0].data["artifacts"]
            if outcome.job is not None:
                outcome.job.rank = back
            if outcome.job is not None and outcome.job.spec.lane is not None:
                outcome.job.lane_pos = lane_tail(state, outcome.job.spec.lane)
            return outcome

        ended = {j.id: j for j in jobs}
        requeued = await apply(held, jobs, requeue_one, by=user, action="requeue")
        replies = []
        for job in requeued:
            kept = None
            if modes[job.id] == "fresh":
                if ctx.artifacts.has_any(job.id):
                    kept = str(ctx.artifacts.set_aside_dir(job.id, job.attempt))
                ctx.syncs.start_fresh(job, ended[job.id].node)
            fields = request.fields_of(job)
            replies.append(c.Requeued(**fields, artifacts=modes[job.id], artifacts_kept=kept))
        return replies


@handles(c.Priority, may=owner("re-prioritise"))
async def priority(ctx: Context, req: c.Priority, user: str) -> list[Job]:
    """Set/adjust the priority (`change`), or move `up` places (negative: down)."""
    state = ctx.state
    async with locked(state) as held:
        jobs = await named_jobs(state, req.ids, req.array, WAITING)
        pending = [ordering.key_of(j) for j in state.jobs.values() if j.state is JobState.PENDING]

        def reorder_one(job: JobRecord) -> Outcome:
            nonlocal pending
            try:
                if req.change is not None:
                    prio, rank = ordering.new_priority(job.spec.priority, req.change), job.rank
                else:
                    prio, rank = ordering.move(pending, job.id, req.up or 0)
                    # Later jobs of the same request move relative to the new order.
                    pending = [k for k in pending if k.id != job.id]
                    pending.append(ordering.Key(job.id, prio, rank))
            except ValueError as exc:
                raise TransitionError(str(exc)) from None
            return transitions.reorder(job, priority=prio, rank=rank, by=user)

        return [request.view_of(j) for j in await apply(held, jobs, reorder_one, by=user, action="re-prioritise")]


@handles(c.Pause, may=owner("pause"))
async def pause(ctx: Context, req: c.Pause, user: str) -> list[Job]:
    state, now = ctx.state, time.time()
    async with locked(state) as held:
        jobs = await chosen_jobs(
            state, req.ids, array=req.array, select=req.select, user=user, action="pause",
            states=transitions.PAUSABLE if req.select and not req.array
            else frozenset({JobState.PENDING, JobState.HELD}),
        )

        def pause_one(job: JobRecord) -> Outcome:
            return transitions.pause(job, by=user, now=now)

        return [request.view_of(j) for j in await apply(held, jobs, pause_one, by=user, action="pause")]


@handles(c.Resume, may=owner("resume"))
async def resume(ctx: Context, req: c.Resume, user: str) -> list[Job]:
    state = ctx.state
    async with locked(state) as held:
        jobs = await chosen_jobs(
            state, req.ids, array=req.array, select=req.select, user=user, action="resume",
            states=RESUMABLE,
        )

        def resume_one(job: JobRecord) -> Outcome:
            return transitions.resume(job, by=user)

        return [request.view_of(j) for j in await apply(held, jobs, resume_one, by=user, action="resume")]
