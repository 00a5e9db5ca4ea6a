"""Checkpoints that follow the job: `$NVQ_ARTIFACTS` on the node ⇄ the queue host.

A chunk-capable runner's syncs are chunk trees in the blob store (chunked_artifacts.py:
only chunks the queue host lacks cross, and the next attempt mounts the tree on
demand). An older runner's go through a *manifest* (`ArtifactsQuery` →
`ArtifactsManifest`: path, size, mtime in ns) compared with `$NVQ_HOME/artifacts/<id>/`,
and only differing files move. Either way big files never travel on the event link
(they would hold every start and exit up behind them): they go over SFTP on a second
channel of the node's SSH connection, or a plain copy for the local node.

* Sync: every `[queue] artifact_sync` seconds for each running job, and once more
  when an attempt ends or is stopped (the job is not placed again until that final
  sync is done). A sync never stops or pauses the job; a file replaced while it is
  copied is simply copied again next time (its mtime moved). Checkpoints should be
  written to a temporary name and renamed, so a copy never catches half a file.
* Unchanged files are recognised by size and mtime: each pulled file gets the node's
  mtime (ns) locally, so the next manifest matches it exactly.
* Restore: before a job's attempt starts, the stored files the node lacks (or holds
  in another version) are pushed into its job directory, then `Start` is sent.
* Quota: a sync that would make the copies exceed `[queue] artifacts_quota` is refused
  as a whole and raises an `artifacts_quota` alert (once per attempt); nothing is
  silently dropped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import anyio

from nvq.daemon.awaited import Awaited
from nvq.daemon.chunked_artifacts import ChunkedArtifacts, supports
from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.state import State
from nvq.model import Job, NewEvent, Tx
from nvq_runner import protocol as p
from nvq_runner.identity import dir_name
from nvq_runner.tree_paths import safe_path

log = logging.getLogger("nvq.artifacts")
QUERY_TIMEOUT = 30.0


class SyncRefused(Exception):
    """The sync would exceed the artifacts quota."""


class Files(Protocol):
    """Moving whole files between the queue host and one node."""

    async def get(self, remote: str, local: Path) -> None: ...

    async def put(self, local: Path, remote: str) -> None: ...

    async def remove(self, remote: str) -> None: ...

    async def close(self) -> None: ...


class LocalFiles:
    """The local node: its runner home is on this host."""

    async def get(self, remote: str, local: Path) -> None:
        await anyio.to_thread.run_sync(shutil.copyfile, remote, local)

    async def put(self, local: Path, remote: str) -> None:
        def copy() -> None:
            Path(remote).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(local, remote)

        await anyio.to_thread.run_sync(copy)

    async def remove(self, remote: str) -> None:
        await anyio.to_thread.run_sync(os.unlink, remote)

    async def close(self) -> None:
        pass


class SftpFiles:
    """An SSH node: SFTP on the connection its link already holds."""

    def __init__(self, sftp: Any) -> None:
        self.sftp = sftp

    @classmethod
    async def open(cls, conn: Any) -> SftpFiles:
        return cls(await conn.start_sftp_client())

    async def get(self, remote: str, local: Path) -> None:
        await self.sftp.get(remote, str(local))

    async def put(self, local: Path, remote: str) -> None:
        await self.sftp.makedirs(str(PurePosixPath(remote).parent), exist_ok=True)
        await self.sftp.put(str(local), remote)
        st = await anyio.Path(local).stat()
        await self.sftp.utime(remote, (st.st_atime, st.st_mtime))

    async def remove(self, remote: str) -> None:
        await self.sftp.remove(remote)

    async def close(self) -> None:
        self.sftp.exit()


def stored(root: Path) -> dict[str, os.stat_result]:
    """The copy on the queue host: relative path → stat."""
    out: dict[str, os.stat_result] = {}
    if not root.is_dir():
        return out
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            with contextlib.suppress(OSError):
                out[path.relative_to(root).as_posix()] = path.stat()
    return out


def plan(
    files: list[p.ArtifactFile], have: dict[str, os.stat_result]
) -> tuple[list[p.ArtifactFile], list[str]]:
    """(files to pull, stored paths to delete): pure, for tests."""
    wanted = {f.path for f in files}
    pull = [
        f
        for f in files
        if f.path not in have
        or have[f.path].st_size != f.size
        or have[f.path].st_mtime_ns != f.mtime_ns
    ]
    return pull, sorted(set(have) - wanted)


class Artifacts:
    def __init__(self, state: State) -> None:
        self.state = state
        self.root = state.home / "artifacts"
        self._manifests = Awaited[p.ArtifactsManifest](QUERY_TIMEOUT)
        self._locks: dict[int, anyio.Lock] = {}
        self.last_sync: dict[int, float] = {}
        self._quota_raised: set[tuple[int, int]] = set()
        # runners with `chunked_artifacts` sync chunk trees into the blob store instead
        self.chunked = ChunkedArtifacts(state)

    def dir(self, job_id: int) -> Path:
        return self.root / str(job_id)

    def has_stored(self, job_id: int) -> bool:
        d = self.dir(job_id)
        return d.is_dir() and any(d.iterdir())

    def has_any(self, job_id: int) -> bool:
        """Stored as files, or as a chunk tree (a chunk-capable runner's syncs)."""
        return self.has_stored(job_id) or self.chunked.holds_files(job_id)

    # ------------------------------------------------------------ manifests

    def on_manifest(self, msg: p.ArtifactsManifest) -> None:
        self._manifests.answer(msg.req, msg)

    async def query(self, node: NodeRuntime, job_id: int) -> p.ArtifactsManifest | None:
        if node.hello is None or "artifacts" not in node.hello.features:
            return None  # an older runner: it would drop a frame it does not know
        return await self._manifests.ask(node, lambda req: p.ArtifactsQuery(req=req, job_id=job_id))

    async def _files(self, node: NodeRuntime) -> Files:
        if node.config is None:
            return LocalFiles()
        conn = getattr(node.channel, "connection", None)
        if conn is None:
            raise OSError(f"node {node.name} has no SSH connection now")
        return await SftpFiles.open(conn)

    # ------------------------------------------------------------ sync (node → here)

    async def sync(self, node: NodeRuntime, job: Job) -> dict[str, Any]:
        """Bring the copy of `job`'s artifacts up to date from `node`."""
        lock = self._locks.setdefault(job.id, anyio.Lock())
        async with lock:
            if supports(node):
                result = await self.chunked.sync(
                    node, job, lambda size: self._check_tree_quota(job, node, size))
                if result.get("synced"):
                    self.last_sync[job.id] = time.time()
                return result
            manifest = await self.query(node, job.id)
            if manifest is None:
                return {"synced": False, "why": "node not reachable"}
            if manifest.error:
                return {"synced": False, "why": manifest.error}
            dest = self.dir(job.id)
            have = await anyio.to_thread.run_sync(stored, dest)
            pull, gone = plan([f for f in manifest.files if safe_path(f.path)], have)
            if not pull and not gone:
                self.last_sync[job.id] = time.time()
                return {"synced": True, "pulled": 0, "deleted": 0}
            await self._check_quota(job, node, pull, have)
            moved = 0
            files = await self._files(node)
            try:
                for f in pull:
                    target = dest / f.path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(f".{target.name}.nvq-part")
                    try:
                        await files.get(f"{manifest.root}/{f.path}", tmp)
                    except Exception as exc:  # vanished since the manifest: next time
                        log.info("job %s: %s not pulled: %s", job.id, f.path, exc)
                        tmp.unlink(missing_ok=True)
                        continue
                    if f.mode is not None:
                        # SFTP writes with the queue host's umask: keep the job's modes.
                        os.chmod(tmp, f.mode & 0o7777)
                    os.utime(tmp, ns=(f.mtime_ns, f.mtime_ns))
                    tmp.replace(target)
                    moved += f.size
            finally:
                await files.close()
            for rel in gone:
                (dest / rel).unlink(missing_ok=True)
            self.last_sync[job.id] = time.time()
            log.info(
                "job %s: synced %d files (%d bytes) from %s", job.id, len(pull), moved, node.name
            )
            return {"synced": True, "pulled": len(pull), "deleted": len(gone), "bytes": moved}

    async def _check_quota(
        self, job: Job, node: NodeRuntime, pull: list[p.ArtifactFile], have: dict[str, Any]
    ) -> None:
        total = await anyio.to_thread.run_sync(_du, self.root)
        after = total + sum(f.size - (have[f.path].st_size if f.path in have else 0) for f in pull)
        await self._within_quota(job, node, after)

    async def _check_tree_quota(self, job: Job, node: NodeRuntime, size: int) -> None:
        """A chunked sync counts what each job's newest tree describes (chunks shared
        between syncs are stored once, so this is an upper bound of the disk used)."""
        trees = await anyio.to_thread.run_sync(self.chunked.described, job.id)
        copies = await anyio.to_thread.run_sync(_du, self.root)
        await self._within_quota(job, node, trees + copies + size)

    async def _within_quota(self, job: Job, node: NodeRuntime, after: int) -> None:
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
            async with self.state.lock:
                await self.state.commit(
                    Tx(events=[NewEvent("artifacts_quota", job.id, node.name, data)])
                )
        raise SyncRefused(f"job {job.id}: over the artifacts quota")

    # ------------------------------------------------------------ restore (here → node)

    async def restore(self, node: NodeRuntime, job: Job) -> int:
        """Push the stored copy into the node's job directory; returns files pushed."""
        lock = self._locks.setdefault(job.id, anyio.Lock())
        async with lock:
            src = self.dir(job.id)
            have = await anyio.to_thread.run_sync(stored, src)
            if not have:
                return 0
            manifest = await self.query(node, job.id)
            if manifest is None or manifest.error or not manifest.root:
                raise OSError(f"cannot list job {job.id}'s directory on {node.name}")
            root = self._root_for(job, manifest.root)
            # The runner lists the newest directory under this id, which is not this
            # job's where it never ran: then nothing of it is there yet.
            same = root == manifest.root
            there = {f.path: f for f in manifest.files} if same else {}
            push = [
                rel
                for rel, st in have.items()
                if rel not in there
                or there[rel].size != st.st_size
                or there[rel].mtime_ns // 10**9 != st.st_mtime_ns // 10**9
            ]
            files = await self._files(node)
            try:
                for rel in push:
                    await files.put(src / rel, f"{root}/{rel}")
            finally:
                await files.close()
            # SFTP sets times to the second: adopt the node's times for the pushed
            # files, so the first sync of the new attempt does not pull them back.
            after = await self.query(node, job.id) if same else None
            if after is not None and not after.error:
                for f in after.files:
                    st = have.get(f.path)
                    if st is not None and st.st_size == f.size:
                        with contextlib.suppress(OSError):
                            os.utime(src / f.path, ns=(f.mtime_ns, f.mtime_ns))
            return len(push)

    # ------------------------------------------------------------ a fresh start

    def set_aside_dir(self, job_id: int, attempt: int) -> Path:
        """Where `requeue --artifacts fresh` keeps the copy attempt `attempt` left."""
        return self.root / f"{job_id}-attempt-{attempt}"

    async def start_fresh(self, node: NodeRuntime | None, job: Job) -> int:
        """`requeue --artifacts fresh`: the next attempt starts from an empty
        `$NVQ_ARTIFACTS`. The stored copy is set aside (not deleted: it was asked for
        a new run, not to forget the last one), and the files in the job's directory
        on `node` (where the last attempt ran) are removed. Returns files removed."""
        lock = self._locks.setdefault(job.id, anyio.Lock())
        async with lock:
            src, dest = self.dir(job.id), self.set_aside_dir(job.id, job.attempt)
            # a chunk tree is set aside as files too, so the reply's path holds them
            await anyio.to_thread.run_sync(self.chunked.checkout, job.id, src)
            if self.has_stored(job.id):
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
            files = await self._files(node)
            try:
                for f in manifest.files:
                    if safe_path(f.path):
                        await files.remove(f"{root}/{f.path}")
            finally:
                await files.close()
            return len(manifest.files)

    def _root_for(self, job: Job, listed: str) -> str:
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
            # the queue host's copies of its output (nvq.daemon.output_copies) go too
            shutil.rmtree(self.state.home / "logs" / str(job_id), ignore_errors=True)
        self.chunked.delete(job_ids)


def _du(root: Path) -> int:
    return sum(st.st_size for st in stored(root).values())
