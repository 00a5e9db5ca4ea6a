"""`nvq queue gc`, and the blob release that follows `job purge`: the queue host's blob
store keeps what jobs still in the queue (in any state) reference, and frees the rest.
Objects younger than the store's grace period stay, so a submit that has stored its
snapshot but not yet its job is never robbed. Also the `[submit]` settings a member's
submit asks for (their snapshot's blobs come in by nvq.daemon.artifacts.snapshot_intake)."""

from __future__ import annotations

import functools

import anyio

from nvq import control as c
from nvq.config import SubmitConfig
from nvq.daemon.artifacts.chunk_sync import TreeLog
from nvq.daemon.artifacts.pull import check_paths, located, pull_into_staging
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.machines.blobs import blob_store
from nvq.domain.permissions import ANYONE, admin, private
from nvq.home import queue_owner
from nvq.world.blobs import GcReport


async def free_blobs(state: State) -> GcReport:
    async with locked(state):
        live = await state.store.manifest_ids()  # one column: never every job in memory
    store = blob_store(state.home)
    # jobs' artifact trees (every sync a job still has) and their chunks
    artifacts = await anyio.to_thread.run_sync(TreeLog(state.home).live_objects, store)
    return await anyio.to_thread.run_sync(
        functools.partial(store.gc, live, live_objects=artifacts))


@handles(c.Gc, may=admin("free the blob store"))
async def gc(ctx: Context, req: c.Gc, user: str) -> c.GcDone:
    report = await free_blobs(ctx.state)
    return c.GcDone(
        objects_freed=report.objects_freed, bytes_freed=report.bytes_freed,
        objects_kept=report.objects_kept, bytes_kept=report.bytes_kept,
    )


@handles(c.Pull, may=private("pull the files of"))
async def pull(ctx: Context, req: c.Pull, user: str) -> c.Pulled:
    state = ctx.state
    check_paths(req.paths)
    job = await state.get_job(req.id)
    node, root = await located(state, ctx.artifacts, job)
    mine = user == queue_owner()
    staging = await pull_into_staging(
        state.home, node, job, root, req.paths, for_user=None if mine else user
    )
    return c.Pulled(path=str(staging), node=node.name)


@handles(c.SubmitSettings, may=ANYONE)
async def submit_settings(ctx: Context, req: c.SubmitSettings, user: str) -> SubmitConfig:
    """`[submit]` as the daemon read it: a member cannot read the owner's config."""
    return ctx.state.config.submit
