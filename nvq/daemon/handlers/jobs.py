"""`nvq job ls|show|wait|note|result|purge`: reading jobs (a `job ls` window, an
array's members, one job in full), annotating them, waiting for them, forgetting
finished ones."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

import anyio
import msgspec

from nvq import control as c
from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import BadRequest, map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import LIVE_STATES, State
from nvq.daemon.handlers import world
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.logs import tail_text
from nvq.daemon.handlers.registry import handles
from nvq.daemon.handlers.why import rows_of, with_reason, with_starts
from nvq.daemon.machines.unreachable import reassign_times
from nvq.daemon.placement.explain import explain
from nvq.domain import attempts, request, selection
from nvq.domain.permissions import ANYONE, may_read_private, owner, private
from nvq.domain.validate import check_note
from nvq.model import Job, JobRecord, JobState, NewEvent, Tx
from nvq.store.windows import JobFilter


@handles(c.ListJobs, may=ANYONE)
async def list_jobs(ctx: Context, req: c.ListJobs, user: str) -> list[c.JobRow]:
    state = ctx.state
    if req.array is not None:
        members = await state.store.array_members(req.array)
        if not members:
            raise BadRequest(f"no array with id {req.array}")
        return rows_of([with_reason(ctx, state.live(m)) for m in members])
    if req.active:
        return rows_of([with_reason(ctx, j) for j in sorted(state.jobs.values(), key=lambda j: j.id)])
    wanted = _states(req.states) if req.states else None
    limit = req.limit
    jobs = await state.store.jobs(states=wanted, limit=limit, newest_first=limit is not None)
    if limit is not None:
        jobs.reverse()
    return rows_of([with_reason(ctx, state.live(j)) for j in jobs])


# Reading a job: its metadata is anyone's, what it holds (logs, result, files) its
# owner's (nvq.daemon.handlers.visibility blanks the rest of other users' jobs in replies).
@handles(c.ShowJob, may=lambda r: (
    owner("reveal the secrets of")
    if r.reveal
    else private("read the logs of")
    if r.logs
    else ANYONE
))
async def show(ctx: Context, req: c.ShowJob, user: str) -> c.JobDetail:
    state = ctx.state
    job = state.live(await state.get_job(req.id))
    shown = with_reason(ctx, job)
    doc: dict[str, Any] = msgspec.to_builtins(shown)
    reason_detail = doc.pop("reason_detail", None)
    events = await state.store.events(job_id=req.id)
    doc["events"] = msgspec.to_builtins(events)
    tried = attempts.derive(events)
    if tried and tried[-1].outcome is not None and tried[-1].result is None:
        tried[-1].result = job.result  # the latest attempt's is the job's own
    if job.state is JobState.RUNNING and tried and tried[-1].outcome is None:
        so_far = running_peak(state, job)  # its runner's, until the exit says it
        if so_far:
            tried[-1].peak_vram_mb, tried[-1].peak_vram_by_card = max(so_far.values()), so_far
    doc["attempts"] = msgspec.to_builtins(tried)
    measured = [a.peak_vram_mb for a in tried if a.peak_vram_mb is not None]
    doc["peak_vram_mb"] = measured[-1] if measured else None
    doc["why"] = await explain(state, ctx.memory, job)
    if req.logs:
        doc["logs"] = await tail_text(state, job, req.logs)
    if isinstance(shown, c.JobRow):
        doc["reason_detail"] = reason_detail
    synced = ctx.artifacts.chunked.shown(req.id)
    if synced["syncs"]:
        doc["artifact_syncs"] = synced["syncs"]
        doc["artifact_notes"] = synced["notes"]
    away = reassign_times(state).get(job.node or "")
    if job.state is JobState.RUNNING and away is not None:
        doc["reassign_at"] = away[1]
    return msgspec.convert(doc, c.JobDetail)


def running_peak(state: State, job: JobRecord) -> dict[int, int]:
    """The peak per card its node's last sample gives the job's running attempt."""
    node = state.nodes.get(job.node or "")
    sample = node.sample if node is not None else None
    return dict(sample.peaks.get(job.id, {})) if sample is not None else {}


@handles(c.Note, may=lambda r: (
    ANYONE
    if r.text is None and r.append is None and not r.clear
    else owner("change the note of")
))
async def note(ctx: Context, req: c.Note, user: str) -> Job:
    state = ctx.state
    async with locked(state) as held:
        job = await state.get_job(req.id)
        if req.clear:
            text = ""
        elif req.append is not None:
            text = f"{job.spec.note}\n{req.append}" if job.spec.note else req.append
        elif req.text is not None:
            text = req.text
        else:
            return request.view_of(job)
        problem = check_note(text)
        if problem is not None:
            raise BadRequest(f"job {job.id}'s note {problem}")
        new = request.asking(job, note=text)
        # Who wrote it: an admin may change a member's note.
        event = NewEvent("job_note", job.id, None, {"by": user})
        await held.commit(Tx(jobs=[new], events=[event]))
        return request.view_of(new)


@handles(c.Result, may=lambda r: (
    private("read the result of") if r.set_json is None else owner("set the result of")
))
async def result(ctx: Context, req: c.Result, user: str) -> c.JsonValue:
    state = ctx.state
    async with locked(state) as held:
        job = await state.get_job(req.id)
        if req.set_json is None:
            return job.result
        with map_exceptions(
            {msgspec.DecodeError: BadRequest}, template="--set is not valid JSON: {}"
        ):
            value = msgspec.json.decode(req.set_json)
        new = msgspec.structs.replace(job, result=value)
        event = NewEvent("job_result_set", job.id, None, {"by": user})
        await held.commit(Tx(jobs=[new], events=[event]))
        return value


@handles(c.Wait, may=ANYONE)
async def wait(ctx: Context, req: c.Wait, user: str) -> c.Coded[list[Job]]:
    """Until every job has ended or the timeout passes. Exit 1 when any job ended
    badly, even if others still run (the reply shows which); else 2 when the timeout
    ran out first, 0 when all completed."""
    state, ids = ctx.state, req.ids
    stored = await state.store.jobs(ids=ids)
    known = {j.id for j in stored}
    missing = [i for i in ids if i not in known]
    if missing:
        raise BadRequest(f"no job with id {missing[0]}")
    deadline = math.inf if req.timeout is None else time.monotonic() + req.timeout
    # Live jobs are exactly the ones in memory: a wait on thousands of jobs costs a
    # dict lookup per unfinished job per change, a read of the jobs that just left
    # memory (did one end badly? then the wait is over), and one read at the end.
    remaining = set(ids)
    bad = ended_badly(state.live(j) for j in stored)
    while True:
        changed = state.changed
        live = [state.jobs[i] for i in remaining if i in state.jobs]
        still = {j.id for j in live}
        if not bad and still != remaining:
            bad = ended_badly(await state.store.jobs(ids=sorted(remaining - still)))
        bad = bad or ended_badly(live)
        remaining = still
        left = deadline - time.monotonic()
        if not remaining or left <= 0 or bad:
            by_id = {j.id: state.live(j) for j in await state.store.jobs(ids=ids)}
            jobs: list[JobRecord] = [by_id[i] for i in ids]
            return c.Coded([request.view_of(j) for j in jobs], wait_exit(jobs))
        with anyio.move_on_after(min(left, 3600)):
            await changed.wait()


def ended_badly(jobs: Iterable[JobRecord]) -> bool:
    return any(j.state.finished and j.state is not JobState.COMPLETED for j in jobs)


def wait_exit(jobs: list[JobRecord]) -> int:
    """`job wait`'s exit status: a failure is never hidden by a timeout."""
    if ended_badly(jobs):
        return 1
    return 0 if all(j.state is JobState.COMPLETED for j in jobs) else 2


# anyone's: the handler purges a member's own finished jobs, an admin's everyone's
@handles(c.Purge, may=ANYONE)
async def purge(ctx: Context, req: c.Purge, user: str) -> c.Purged:
    state = ctx.state
    async with locked(state) as held:
        ids = await state.store.finished_ids(req.before)
        if req.ids is not None:
            chosen = set(req.ids)
            ids = [i for i in ids if i in chosen]
        # A member forgets their own jobs; an admin (the queue's owner among them)
        # everyone's, as `job purge --help` says.
        if ids and user not in queue_admins(state):
            mine = await state.store.jobs(ids=ids)
            ids = [j.id for j in mine if j.user == user]
        if req.dry_run:
            return c.Purged(purged=0, ids=ids)
        if ids:
            data = {"count": len(ids), "by": user, "before": req.before}
            # A purged prerequisite no longer holds anyone back: a pass.
            await held.commit(
                Tx(delete_jobs=ids, events=[NewEvent("jobs_purged", None, None, data)]),
                Effects(kick=True),
            )
            ctx.artifacts.delete(ids)  # their checkpoints go with them
    if ids:
        await world.free_blobs(state)  # and their snapshots, unless another job shares one
    return c.Purged(purged=len(ids), ids=ids)


def _states(names: list[str] | None) -> frozenset[JobState]:
    """The states named (every state when none), or one line naming the first word
    that is not one and the states there are."""
    if not names:
        return frozenset(JobState)
    with map_exceptions({ValueError: BadRequest}):
        return selection.parse_states(names)


@handles(c.JobWindow, may=ANYONE)
async def job_window(ctx: Context, req: c.JobWindow, user: str) -> c.JobPage:
    state = ctx.state
    if req.limit is not None and req.limit < 1:
        raise BadRequest(f"--limit must be at least 1, not {req.limit}")
    wanted = _states(req.states) & LIVE_STATES if req.active else _states(req.states)
    if req.mine and req.user is not None and req.user != user:
        raise BadRequest("give --user NAME or --mine, not both")
    flt = JobFilter(
        user=user if req.mine else req.user,
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
    by_id: dict[int, JobRecord] = {j.id: j for j in live}
    by_id.update((j.id, j) for j in finished)
    rows = sorted(by_id.values(), key=lambda j: j.id)
    if req.limit is not None and not req.all and len(rows) > req.limit:
        rows, more = rows[-req.limit :], True
    page = c.JobPage(jobs=rows_of([with_reason(ctx, j) for j in rows]), more=more)
    await with_starts(ctx, page.jobs, user)
    away = reassign_times(state)
    if any(j.state is JobState.RUNNING and j.node in away for j in rows):
        page.unreachable = {node: at for node, (_, at) in away.items()}
    return page


@handles(c.ProgressLines, may=ANYONE)  # only the lines the asker may read are answered
async def progress_lines(ctx: Context, req: c.ProgressLines, user: str) -> list[c.ProgressLine]:
    """The running jobs' progress lines, from memory (samples keep them there; they
    raise no event), for the front ends that show them moving. A line is what a job
    wrote of itself: answered only for jobs whose output the asker may read."""
    state = ctx.state
    admins, read = queue_admins(state), state.config.queue.members_read
    return [
        c.ProgressLine(id=job.id, progress=job.progress)
        for job in sorted(state.jobs.values(), key=lambda j: j.id)
        if job.state is JobState.RUNNING and may_read_private(job.user, user, admins, read)
    ]
