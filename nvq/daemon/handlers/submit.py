"""`nvq submit`: checking a job's options and turning it into the rows to insert
(one, or one per array index; a lane job at its lane's tail)."""

from __future__ import annotations

import time

from nvq import control as c
from nvq.daemon.artifacts.snapshot_intake import check_sent
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import BadRequest, RequestError, map_exceptions
from nvq.daemon.core.held import Held, locked
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.handlers.submit_preview import preview
from nvq.daemon.machines.blobs import blob_store
from nvq.daemon.placement import reserving
from nvq.daemon.placement.pinning import check_pin, into_lane
from nvq.daemon.placement.quotas import check_queued
from nvq.daemon.placement.submit_checks import await_reports, check_mail, check_runnable
from nvq.daemon.placement.vram_advice import advise
from nvq.domain import arrays, request, transitions
from nvq.domain.permissions import ANYONE, owner
from nvq.domain.validate import SpecError, validate_spec
from nvq.home import queue_owner
from nvq.model import JobRecord, JobSpec, Tx
from nvq_runner.protocol import is_hash


@handles(c.Submit, may=ANYONE)
async def submit(ctx: Context, req: c.Submit, user: str) -> c.Submitted:
    state = ctx.state
    sent, vram_note = await advise(state, req.spec)
    spec, job = await _checked(ctx, sent, user)
    async with locked(state) as held:
        new_jobs, unreported = await _rows(held, ctx, spec, job, user)
        inserted = await held.commit(Tx(new_jobs=new_jobs), Effects(kick=True))
    fields = request.fields_of(inserted[0])
    if unreported:
        # Accepted unchecked: the reply says which nodes it waits to hear from.
        fields["unreported"] = unreported
    if vram_note:
        fields["vram_note"] = vram_note
    return c.Submitted(**fields)


@handles(c.Clone, may=owner("clone"))
async def clone(ctx: Context, req: c.Clone, user: str) -> c.Submitted:
    """A new job asking for what job `req.id` asked for, submitted as any submit is
    (checked again: its snapshot must still be in the blob store)."""
    spec = (await ctx.state.get_job(req.id)).spec
    if spec.interactive:
        raise BadRequest(f"job {req.id} is a shell session: `nvq job shell` opens another")
    return await submit(ctx, c.Submit(spec), user)


@handles(c.SubmitDry, may=ANYONE)
async def submit_dry_run(ctx: Context, req: c.SubmitDry, user: str) -> c.SubmitPreview:
    """Every check of `submit`, then where it would start or why it would wait."""
    sent, vram_note = await advise(ctx.state, req.spec)
    spec, job = await _checked(ctx, sent, user)
    async with locked(ctx.state) as held:
        new_jobs, unreported = await _rows(held, ctx, spec, job, user)
        answer = await preview(ctx, new_jobs, unreported)
    answer.vram_note = vram_note
    return answer


async def _checked(ctx: Context, sent: JobSpec, user: str) -> tuple[JobSpec, JobRecord]:
    """`sent` as `validate_spec` passed it (its normal form), and the job it asks for,
    the queue's own checks passed; then a moment for nodes still connecting for the
    first time, so that `_rows` can check it against them."""
    state = ctx.state
    # The authority: whatever sent the frame (not only the CLI), nothing unchecked
    # reaches the store or a runner's exec. What it checked is not checked again here.
    with map_exceptions({SpecError: BadRequest}):
        spec = validate_spec(sent)
    check_mail(state, spec)
    reserving.check_spec(state, spec, user)
    if spec.node is not None:
        check_pin(state, spec.node)
    if spec.manifest_id and not (
        is_hash(spec.manifest_id) and blob_store(state.home).has(spec.manifest_id)
    ):
        raise RequestError(
            f"the snapshot {spec.manifest_id[:12]} is not in the queue host's blob store "
            "(submit from the queue host, or pass --no-snapshot)"
        )
    if spec.manifest_id and user != queue_owner():  # the owner stores their own
        check_sent(ctx.snapshots, user, spec.manifest_id)
    job = transitions.new_job(spec, user=user, now=time.time())
    await await_reports(state, spec)
    return spec, job


async def _rows(
    held: Held, ctx: Context, spec: JobSpec, job: JobRecord, user: str
) -> tuple[list[JobRecord], list[str]]:
    """The rows to insert, and the nodes it could not be checked against yet (not
    reported)."""
    for dep in {*spec.after, *spec.after_any}:
        await ctx.state.get_job(dep)
    new_jobs = await shape_submission(held, spec, job)
    check_queued(ctx.state, user, len(new_jobs))
    return new_jobs, check_runnable(ctx.state, ctx.memory, ctx.machines, new_jobs[0])


async def shape_submission(held: Held, spec: JobSpec, job: JobRecord) -> list[JobRecord]:
    """Turn a submit that passed `validate_spec` into the rows to insert: a lane job at
    its lane's tail, an array's members. Under the lock: array ids are taken from the
    store's sequence."""
    state = held.state
    if spec.lane is not None:
        job = into_lane(state, spec, job)
    if spec.array is None:
        return [job]
    spec_array = arrays.parse_array(spec.array)  # well formed: validate_spec parsed it
    members = arrays.expand(job, spec_array, await state.store.next_job_id())
    if job.lane_pos is not None:
        for n, member in enumerate(members):
            member.lane_pos = job.lane_pos + n
    return members
