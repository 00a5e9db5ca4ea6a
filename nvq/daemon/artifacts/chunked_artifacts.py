"""Artifact syncs as chunk trees: ask the runner for its tree, store the chunks the
blob store lacks (chunk_sync.py), log the sync, and hand the newest tree to the next
attempt's Start so the node mounts it on demand (or restores it in full where it
cannot). The byte ranges are read over SFTP, or over the runner link for a pilot
(link_reads.py).

A runner says it keeps artifacts with `chunked_artifacts` in its Hello. Every runner
this queue installs does; the word stays because a runner resident from before it
survives an upgrade until it restarts, and would drop the link on a frame it cannot
decode: such a runner's jobs get no artifact syncs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from nvq.daemon.artifacts.chunk_sync import (
    ReadRanges,
    TreeLog,
    load_tree,
    read_local,
    record,
    sftp_reader,
    summary,
    take,
)
from nvq.daemon.artifacts.link_reads import LinkReads, reads_over_link
from nvq.daemon.core.awaited import Awaited
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.machines.blobs import blob_store
from nvq.model import JobRecord
from nvq_runner import protocol as p
from nvq_runner.artifact_tree import FILE, decode_tree
from nvq_runner.protocol import ArtifactsTreeQuery, ArtifactsTreeReply

log = logging.getLogger("nvq.artifacts")
FEATURE = "chunked_artifacts"
INPUTS = "inputs"  # the runner gives a job its prerequisites' trees ($NVQ_INPUTS)
QUERY_TIMEOUT = 120.0  # the runner chunks what changed before it answers


def _lazy(node: NodeRuntime) -> bool:
    return node.config.lazy_artifacts if node.config is not None else True


def supports(node: NodeRuntime) -> bool:
    return node.hello is not None and FEATURE in node.hello.features


class ChunkedArtifacts:
    def __init__(self, state: State) -> None:
        self.state = state
        self.log = TreeLog(state.home)
        self.store = blob_store(state.home)
        self._trees = Awaited[ArtifactsTreeReply](QUERY_TIMEOUT)
        self.link_reads = LinkReads()

    def start_msg(self, node: NodeRuntime, start: p.Start) -> p.Start:
        """`start` with the job's newest tree, for a runner that mounts it."""
        tree = self.latest_tree(start.job_id) if supports(node) else ""
        if not tree:
            return start
        return msgspec.structs.replace(start, artifacts_tree=tree, lazy_artifacts=_lazy(node))

    def with_inputs(self, node: NodeRuntime, job: JobRecord, start: p.Start) -> p.Start:
        """`start` naming the newest tree of each of the job's prerequisites, which
        the runner gives the job read-only at `$NVQ_INPUTS/<id>/`."""
        if not (job.spec.after or job.spec.after_any) or node.hello is None \
                or INPUTS not in node.hello.features:
            return start
        inputs = {str(dep): self.latest_tree(dep) for dep in [*job.spec.after, *job.spec.after_any]}
        return msgspec.structs.replace(start, inputs=inputs,
                                       lazy_artifacts=_lazy(node))

    def holds_files(self, job_id: int) -> bool:
        """The newest tree names at least one file (an empty `$NVQ_ARTIFACTS` syncs
        too, as an empty tree)."""
        tree_id = self.latest_tree(job_id)
        tree = load_tree(self.store, tree_id) if tree_id else None
        return tree is not None and bool(tree.files())

    def latest_tree(self, job_id: int) -> str:
        last = self.log.latest(job_id)
        return last.tree if last is not None else ""

    def on_reply(self, msg: ArtifactsTreeReply) -> None:
        self._trees.answer(msg.req, msg)

    async def _query(self, node: NodeRuntime, job_id: int, known: str) -> ArtifactsTreeReply | None:
        return await self._trees.ask(
            node, lambda req: ArtifactsTreeQuery(req=req, job_id=job_id, known=known))

    def described(self, but: int) -> int:
        """Bytes the newest trees of every job except `but` describe."""
        total = 0
        if self.log.root.is_dir():
            for item in self.log.root.glob("*.jsonl"):
                if item.stem != str(but):
                    with contextlib.suppress(ValueError):
                        last = self.log.latest(int(item.stem))
                        total += last.bytes if last is not None else 0
        return total

    async def sync(self, node: NodeRuntime, job: JobRecord,
                   check: Callable[[int], Awaitable[None]] | None = None) -> dict[str, Any]:
        """`check` is given the size the new tree describes and raises to refuse it."""
        last = self.log.latest(job.id)
        known = last.tree if last is not None else ""
        reply = await self._query(node, job.id, known)
        if reply is None:
            return {"synced": False, "why": "node not reachable"}
        if reply.error:
            return {"synced": False, "why": reply.error}
        described = decode_tree(reply.tree)
        if last is None and not described.entries:
            # nothing written, nothing before: no tree kept, no sync shown
            return {"synced": True, "tree": "", "bytes": 0, "sent": 0, "time": time.time()}
        if check is not None:
            await check(sum(e.size for e in described.files()))
        previous = await anyio.to_thread.run_sync(load_tree, self.store, known) if known else None
        sftp = None
        read: ReadRanges = read_local
        if reads_over_link(node):
            read = self.link_reads.reader(node, job.id, reply.root)
        elif node.config is not None:
            conn = getattr(node.channel, "connection", None)
            if conn is None:
                return {"synced": False, "why": f"node {node.name} has no SSH connection now"}
            sftp = await conn.start_sftp_client()
            read = sftp_reader(sftp)
        try:
            tree_id, tree, sent, count = await take(self.store, reply, read, previous)
        finally:
            if sftp is not None:
                sftp.exit()
        unchanged = last is not None and tree_id == last.tree and last.attempt == job.attempt \
            and last.fetched == reply.fetched_bytes
        if not unchanged:
            entry = record(reply, tree_id, tree, sent, count, attempt=job.attempt, node=node.name)
            await anyio.to_thread.run_sync(self.log.append, job.id, entry)
        log.info("job %s: synced tree %s from %s: %d of %d bytes sent", job.id, tree_id[:12],
                 node.name, sent, tree.total_size())
        return {"synced": True, "tree": tree_id, "bytes": tree.total_size(), "sent": sent,
                "time": time.time()}

    def shown(self, job_id: int) -> dict[str, Any]:
        return summary(self.log.records(job_id))

    def checkout(self, job_id: int, dest: Path) -> None:
        """Make `dest` hold the newest tree's files (for `job artifacts --get`), unless
        it does already (`<dest>.tree` names the tree checked out there)."""
        tree_id = self.latest_tree(job_id)
        marker = dest.with_name(f"{dest.name}.tree")
        if not tree_id or (marker.exists() and marker.read_text() == tree_id):
            return
        tree = load_tree(self.store, tree_id)
        if tree is None:
            return
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)  # no files: an empty directory
        for entry in tree.entries:
            target = dest / entry.path
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if entry.kind != FILE:
                target.mkdir(mode=0o700, exist_ok=True)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                for chunk in entry.chunks:
                    out.write(self.store.read_bytes(chunk.sha256))
            os.chmod(target, entry.mode)
            os.utime(target, ns=(entry.mtime_ns, entry.mtime_ns))
        marker.write_text(tree_id)

    def set_aside(self, job_id: int, attempt: int) -> None:
        self.log.set_aside(job_id, attempt)
        (self.state.home / "artifacts" / f"{job_id}.tree").unlink(missing_ok=True)

    def delete(self, job_ids: list[int]) -> None:
        self.log.delete(job_ids)
        for job_id in job_ids:
            (self.state.home / "artifacts" / f"{job_id}.tree").unlink(missing_ok=True)
