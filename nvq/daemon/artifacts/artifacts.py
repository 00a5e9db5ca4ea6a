"""Checkpoints that follow the job: `$NVQ_ARTIFACTS` on the node ⇄ the queue host.

Every sync is a chunk tree in the blob store (chunked_artifacts.py: only chunks the
queue host lacks cross, and the next attempt's node mounts the tree on demand or
restores it in full). Big files never travel on the event link (they would hold every
start and exit up behind them): the chunks are read over SFTP on a second channel of
the node's SSH connection, over the runner link for a pilot, or from disk for the
local node. Whole files stored by an older queue were turned into trees once, at the
daemon's first start (whole_file_conversion.py).

* Sync: every `[queue] artifact_sync` seconds for each running job, and once more
  when an attempt ends or is stopped (the job is not placed again until that final
  sync is done). A sync never stops or pauses the job; a file replaced while it is
  read is taken again next time. Checkpoints should be written to a temporary name
  and renamed, so a sync never catches half a file.
* Quota: a sync that would make the copies exceed `[queue] artifacts_quota` is refused
  as a whole and raises an `artifacts_quota` alert (once per attempt); nothing is
  silently dropped.
* `$NVQ_HOME/artifacts/<id>/` is the newest tree checked out as files, made when
  someone asks (`job artifacts`, a fresh start that sets the copy aside).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from nvq.daemon.artifacts.chunked_artifacts import ChunkedArtifacts, supports
from nvq.daemon.core.awaited import Awaited
from nvq.daemon.core.held import locked
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.errors import UserError
from nvq.model import JobRecord, NewEvent, Tx
from nvq_runner import protocol as p
from nvq_runner.identity import dir_name
from nvq_runner.tree_paths import safe_path

log = logging.getLogger("nvq.artifacts")
QUERY_TIMEOUT = 30.0


class SyncRefused(UserError):
    """The sync would exceed the artifacts quota."""


def stored(root: Path) -> dict[str, os.stat_result]:
    """The files under `root` on the queue host: relative path → stat."""
    out: dict[str, os.stat_result] = {}
    if not root.is_dir():
        return out
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            with contextlib.suppress(OSError):
                out[path.relative_to(root).as_posix()] = path.stat()
    return out


async def _remove_on_node(node: NodeRuntime, paths: list[str]) -> None:
    """Remove `paths` (absolute, on `node`): a plain unlink for the local node, SFTP on
    the connection an SSH node's link already holds."""
    if node.config is None:
        for path in paths:
            await anyio.to_thread.run_sync(os.unlink, path)
        return
    conn = getattr(node.channel, "connection", None)
    if conn is None:
        raise OSError(f"node {node.name} has no SSH connection now")
    sftp = await conn.start_sftp_client()
    try:
        for path in paths:
            await sftp.remove(path)
    finally:
        sftp.exit()


class Artifacts:
    def __init__(self, state: State) -> None:
        self.state = state
        self.root = state.home / "artifacts"
        self._manifests = Awaited[p.ArtifactsManifest](QUERY_TIMEOUT)
        self._locks: dict[int, anyio.Lock] = {}
        self.last_sync: dict[int, float] = {}
        self._quota_raised: set[tuple[int, int]] = set()
        self.chunked = ChunkedArtifacts(state)

    def dir(self, job_id: int) -> Path:
        return self.root / str(job_id)

    def has_any(self, job_id: int) -> bool:
        """The newest tree names at least one file."""
        return self.chunked.holds_files(job_id)

    # ------------------------------------------------------------ the node's listing

    def on_manifest(self, msg: p.ArtifactsManifest) -> None:
        self._manifests.answer(msg.req, msg)

    async def query(self, node: NodeRuntime, job_id: int) -> p.ArtifactsManifest | None:
        """Where job `job_id`'s artifacts directory is on `node`, and what it holds
        (`job pull`, a fresh start); None from a runner that keeps no artifacts."""
        if not supports(node):
            return None  # an older runner: it would drop a frame it does not know
        return await self._manifests.ask(node, lambda req: p.ArtifactsQuery(req=req, job_id=job_id))

    # ------------------------------------------------------------ sync (node → here)

    async def sync(self, node: NodeRuntime, job: JobRecord) -> dict[str, Any]:
        """Bring the queue host's tree of `job`'s artifacts up to date from `node`."""
        if not supports(node):
            return {"synced": False, "why": "the node's runner keeps no artifacts"}
        lock = self._locks.setdefault(job.id, anyio.Lock())
        async with lock:
            result = await self.chunked.sync(
                node, job, lambda size: self._check_tree_quota(job, node, size))
            if result.get("synced"):
                self.last_sync[job.id] = time.time()
            return result

    async def _check_tree_quota(self, job: JobRecord, node: NodeRuntime, size: int) -> None:
        """A sync counts what each job's newest tree describes (chunks shared between
        syncs are stored once, so this is an upper bound of the disk used), and the
        files checked out or set aside under `$NVQ_HOME/artifacts`."""
        trees = await anyio.to_thread.run_sync(self.chunked.described, job.id)
        copies = await anyio.to_thread.run_sync(_du, self.root)
        await self._within_quota(job, node, trees + copies + size)

    async def _within_quota(self, job: JobRecord, node: NodeRuntime, after: int) -> None:
        quota = self.state.config.queue.artifacts_quota_mb * 1024 * 1024
        if after <= quota:
            return
        key = (job.id, job.attempt)
        if key not in self._quota_raised:
            self._quota_raised.add(key)
            why = (
                f"artifact sync refused: the copies would take {after} bytes, over the "
                f"artifacts_quota of {quota} bytes"
            )
            data = {"attempt": job.attempt, "reason": why, "bytes": after, "quota": quota}
            async with locked(self.state) as held:
                await held.commit(
                    Tx(events=[NewEvent("artifacts_quota", job.id, node.name, data)])
                )
        raise SyncRefused(f"job {job.id}: over the artifacts quota")

    # ------------------------------------------------------------ a fresh start

    def set_aside_dir(self, job_id: int, attempt: int) -> Path:
        """Where `requeue --artifacts fresh` keeps the copy attempt `attempt` left."""
        return self.root / f"{job_id}-attempt-{attempt}"

    async def start_fresh(self, node: NodeRuntime | None, job: JobRecord) -> int:
        """`requeue --artifacts fresh`: the next attempt starts from an empty
        `$NVQ_ARTIFACTS`. The stored copy is set aside (not deleted: it was asked for
        a new run, not to forget the last one), and the files in the job's directory
        on `node` (where the last attempt ran) are removed. Returns files removed."""
        lock = self._locks.setdefault(job.id, anyio.Lock())
        async with lock:
            src, dest = self.dir(job.id), self.set_aside_dir(job.id, job.attempt)
            # the tree is set aside as files too, so the reply's path holds them
            await anyio.to_thread.run_sync(self.chunked.checkout, job.id, src)
            if src.is_dir() and any(src.iterdir()):
                await anyio.to_thread.run_sync(os.replace, src, dest)
            await anyio.to_thread.run_sync(self.chunked.set_aside, job.id, job.attempt)
            if node is None:
                return 0
            manifest = await self.query(node, job.id)
            if manifest is None or manifest.error or not manifest.root:
                raise OSError(f"cannot list job {job.id}'s directory on {node.name}")
            root = self._root_for(job, manifest.root)
            if root != manifest.root:
                return 0  # its directory is not the newest there: nothing of it to clear
            gone = [f"{root}/{f.path}" for f in manifest.files if safe_path(f.path)]
            await _remove_on_node(node, gone)
            return len(manifest.files)

    def _root_for(self, job: JobRecord, listed: str) -> str:
        """Job `job`'s artifacts directory on the node, beside the one the runner
        listed (`<jobs>/<dir>/artifacts`): its directory is named by its identity."""
        if not job.nonce:
            return listed
        jobs_root = PurePosixPath(listed).parent.parent
        name = dir_name(job.id, self.state.store.queue_id, job.nonce)
        return str(jobs_root / name / "artifacts")

    # ------------------------------------------------------------ listing, purge

    def listing(self, job_id: int) -> dict[str, Any]:
        d = self.dir(job_id)
        self.chunked.checkout(job_id, d)
        files = [
            {"path": rel, "size": st.st_size, "mtime": st.st_mtime}
            for rel, st in sorted(stored(d).items())
        ]
        return {
            "job_id": job_id,
            "dir": str(d),
            "files": files,
            "bytes": sum(f["size"] for f in files),
            "last_sync": self.last_sync.get(job_id),
        }

    def delete(self, job_ids: list[int]) -> None:
        for job_id in job_ids:
            shutil.rmtree(self.dir(job_id), ignore_errors=True)
            for kept in self.root.glob(f"{job_id}-attempt-*"):
                shutil.rmtree(kept, ignore_errors=True)
            self.last_sync.pop(job_id, None)
            # the queue host's copies of its output (nvq.daemon.output.output_copies) go too
            shutil.rmtree(self.state.home / "logs" / str(job_id), ignore_errors=True)
        self.chunked.delete(job_ids)


def _du(root: Path) -> int:
    return sum(st.st_size for st in stored(root).values())
