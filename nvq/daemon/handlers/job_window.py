"""`job ls`: a window on the queue, not a dump of it. Live jobs come from memory (all
of them, unless `limit` cuts), finished ones from the store, newest first, so the
answer costs the same at a hundred jobs as at a million."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import BadRequest, map_exceptions
from nvq.daemon.handlers.why import rows_of, with_reason
from nvq.daemon.state import LIVE_STATES
from nvq.model import Job, JobState
from nvq.store.windows import JobFilter


def _states(names: list[str] | None) -> frozenset[JobState]:
    if not names:
        return frozenset(JobState)
    template = "{}; states are " + ", ".join(s.value for s in JobState)
    with map_exceptions({ValueError: BadRequest}, template=template):
        return frozenset(JobState(s) for s in names)


async def job_window(ctx: Context, req: c.JobWindow, user: str) -> c.JobPage:
    state = ctx.state
    if req.limit is not None and req.limit < 1:
        raise BadRequest(f"--limit must be at least 1, not {req.limit}")
    wanted = _states(req.states)
    flt = JobFilter(
        user=req.user,
        tag=req.tag,
        array=req.array,
        since_id=req.since_id,
        since_time=req.since_time,
    )
    if req.array is not None and not (await state.store.array_counts([req.array]))[req.array]:
        raise BadRequest(f"no array with id {req.array}")
    # Memory first, then the store: a job that ends in between is then found finished
    # in the store, and the store's copy (the newer) wins below.
    live = [j for j in state.jobs.values() if j.state in wanted and flt.matches(j)]
    cap = None if req.all else req.limit if req.limit is not None else req.finished
    finished, more = await state.store.newest_jobs(wanted - LIVE_STATES, flt, cap)
    by_id: dict[int, Job] = {j.id: j for j in live}
    by_id.update((j.id, j) for j in finished)
    rows = sorted(by_id.values(), key=lambda j: j.id)
    if req.limit is not None and not req.all and len(rows) > req.limit:
        rows, more = rows[-req.limit :], True
    return c.JobPage(jobs=rows_of([with_reason(ctx, j) for j in rows]), more=more)
