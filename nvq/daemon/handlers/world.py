"""`nvq queue gc`, and the blob release that follows `job purge`: the queue host's blob
store keeps what jobs still in the queue (in any state) reference, and frees the rest.
Objects younger than the store's grace period stay, so a submit that has stored its
snapshot but not yet its job is never robbed."""

from __future__ import annotations

from typing import Any

import anyio

from nvq import control as c
from nvq.daemon.blobs import blob_store
from nvq.daemon.context import Context
from nvq.daemon.state import State
from nvq.world.blobs import GcReport


async def free_blobs(state: State) -> GcReport:
    async with state.lock:
        live = {j.manifest_id for j in await state.store.jobs() if j.manifest_id}
    store = blob_store(state.home)
    return await anyio.to_thread.run_sync(store.gc, live)


async def gc(ctx: Context, req: c.Gc, user: str) -> tuple[Any, int]:
    report = await free_blobs(ctx.state)
    return c.GcDone(
        objects_freed=report.objects_freed, bytes_freed=report.bytes_freed,
        objects_kept=report.objects_kept, bytes_kept=report.bytes_kept,
    ), 0
