"""A fresh snapshot of a directory in a running job's working copy, for a job it
submits: the files the caller wrote since it started (a generated config, a
preprocessed shard) go with the new job, which then runs on any node.

No new transfer: the directory comes to the queue host as `job pull` brings it (a tar
stream from `nvq_runner pack` over the node's SSH connection, a step of a pilot's
allocation, or a copy on the local node), and is snapshotted there by the walk every
submit makes (nvq.world.snapshot: the same ignore files and `[submit] max_snapshot`)
into the queue's blob store. The staged copy is removed at once. Only a directory
inside the caller's working copy is taken: that copy is the job's own, which its
owner may `job pull` anyway."""

from __future__ import annotations

import shutil

import anyio

from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.artifacts.pull import located, pull_into_staging, work_dir
from nvq.daemon.artifacts.snapshot_intake import Sent
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.state import State
from nvq.daemon.machines.blobs import blob_store
from nvq.model import JobRecord
from nvq.world.snapshot import SnapshotError, store_snapshot, take_snapshot
from nvq_runner.tree_paths import safe_path


async def snapshot_job_dir(
    state: State, artifacts: Artifacts, sent: Sent, caller: JobRecord, subdir: str, user: str
) -> str:
    """The manifest id of `subdir` ("" its top) of running job `caller`'s working copy,
    as it is now on its node."""
    if subdir and not safe_path(subdir):
        raise RequestError(f"{subdir!r} is not a directory inside job {caller.id}'s working copy")
    node, root = await located(state, artifacts, caller)
    where = work_dir(caller, root)
    source = str(where / subdir) if subdir else str(where)
    staging = await pull_into_staging(state.home, node, caller, root, [], whole=source)
    config = state.config.submit

    def take() -> str:
        try:
            snapshot = take_snapshot(staging / "work", max_size=config.max_snapshot)
            return store_snapshot(snapshot, blob_store(state.home))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    try:
        manifest = await anyio.to_thread.run_sync(take)
    except SnapshotError as exc:
        # the walk names the staged copy; the user knows the directory by its own path
        raise RequestError(str(exc).replace(str(staging / "work"), source)) from None
    # a member may submit it (snapshot_intake.check_sent): the daemon took it for them
    sent.setdefault(user, set()).add(manifest)
    return manifest
