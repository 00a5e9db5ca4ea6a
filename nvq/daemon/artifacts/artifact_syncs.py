"""The artifact work queue: each attempt's last sync before its job may run again,
periodic syncs while it runs, clearing for a fresh start.

Items are typed (`Final`, `Periodic`, `Fresh`); slow work (reading chunks) runs in
this module's own tasks, never under the state's lock. How artifacts travel is
`nvq.daemon.artifacts.artifacts.Artifacts`: every transfer is one call to it (`_transfer`,
`_clear`), so its transport may change under this queue. This is also what carries
out a commit's starts and ended attempts (`nvq.daemon.core.effects.Actions`): a start
names the job's newest tree, which the node mounts or restores itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import anyio

from nvq.daemon.artifacts.artifacts import Artifacts, SyncRefused
from nvq.daemon.artifacts.chunked_artifacts import supports
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.model import JobRecord, JobState

log = logging.getLogger("nvq.machines")
TICK = 1.0  # seconds between checks for due periodic syncs


@dataclass(frozen=True, slots=True)
class Final:
    """An attempt ended on `node`: its last artifacts, before its job may run again."""

    node: str
    job_id: int


@dataclass(frozen=True, slots=True)
class Periodic:
    """A running attempt's artifacts, every `artifact_sync` or when it asks."""

    node: str
    job_id: int


@dataclass(frozen=True, slots=True)
class Fresh:
    """`requeue --artifacts fresh`: the job's artifacts cleared, here and on `node`."""

    node: str | None
    job_id: int


Work = Final | Periodic | Fresh


class ArtifactSyncs:
    def __init__(self, state: State, artifacts: Artifacts) -> None:
        self.state = state
        self.artifacts = artifacts
        self.syncing: set[int] = set()  # jobs whose final sync runs: not placeable
        self._due: set[int] = set()  # jobs with a periodic sync queued or running
        self._send, self._recv = anyio.create_memory_object_stream[Work](10_000)

    # ------------------------------------------------------------ what commits owe

    def attempt_ended(
        self, node: NodeRuntime, job: JobRecord | None, attempt: int, *, kept: bool = True,
    ) -> None:
        """An attempt exited on `node`: take its last artifacts before the job may run
        again. Must hold the lock (placement must see `syncing` at once). `kept`:
        False when the runner saw nothing in the job's artifacts folder."""
        if job is None or job.attempt != attempt or job.node not in (None, node.name):
            return  # a stale attempt: the job has moved on, its copy must not regress
        if not supports(node):
            return
        if not kept and not self.artifacts.chunked.latest_tree(job.id):
            return  # nothing there and nothing here: the sync would find nothing
        self.syncing.add(job.id)
        self._submit(Final(node.name, job.id))

    def post_start(self, node: NodeRuntime, job: JobRecord) -> None:
        """Send `Start`, naming the job's newest tree: the runner mounts (or restores)
        it itself."""
        chunked = self.artifacts.chunked
        start = chunked.with_inputs(node, job, self.state.start_msg(job))
        node.post(chunked.start_msg(node, start))

    # ------------------------------------------------------------ what people ask

    def start_fresh(self, job: JobRecord, node: str | None) -> None:
        """`requeue --artifacts fresh`: clear the job's artifacts (here and on `node`,
        where its last attempt ran) before it may be placed again. Must hold the lock."""
        self.syncing.add(job.id)
        self._submit(Fresh(node, job.id))

    def sync_now(self, node: NodeRuntime, job_id: int, attempt: int) -> None:
        """The job asked for a sync (`$NVQ_ARTIFACTS/.sync`)."""
        job = self.state.jobs.get(job_id)
        if job is None or job.attempt != attempt or job.node != node.name:
            return
        self._periodic(node.name, job_id)

    def _periodic(self, node: str, job_id: int) -> None:
        if job_id not in self._due:
            self._due.add(job_id)
            self._submit(Periodic(node, job_id))

    def _submit(self, item: Work) -> None:
        try:
            self._send.send_nowait(item)
        except anyio.WouldBlock:
            log.error("artifact work queue full; dropping %s", item)
            self.syncing.discard(item.job_id)

    # ------------------------------------------------------------ tasks

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._ticker)
            async with self._recv:
                async for item in self._recv:
                    tg.start_soon(self._work, item)

    async def _work(self, item: Work) -> None:
        if isinstance(item, Fresh):
            await self._clear(item)
            return
        node = self.state.nodes[item.node]
        try:
            job = await self.state.get_job(item.job_id)
            # a periodic sync only while that attempt still runs there
            running = job.state is JobState.RUNNING and job.node == item.node
            if isinstance(item, Final) or running:
                await self._transfer(node, job)
        except Exception:
            log.exception("artifact %s of job %s on %s failed",
                          type(item).__name__.lower(), item.job_id, item.node)
        finally:
            if isinstance(item, Final):
                self.syncing.discard(item.job_id)
                self.state.kick()
            elif isinstance(item, Periodic):
                self._due.discard(item.job_id)

    async def _transfer(self, node: NodeRuntime, job: JobRecord) -> None:
        """The one call that moves an attempt's artifacts from its node to here."""
        try:
            await self.artifacts.sync(node, job)
        except SyncRefused as exc:
            log.warning("%s", exc)

    async def _clear(self, item: Fresh) -> None:
        node = self.state.nodes.get(item.node) if item.node else None
        try:
            job = await self.state.get_job(item.job_id)
            removed = await self.artifacts.start_fresh(node, job)
            log.info("job %s: artifacts cleared for a fresh start (%d files)", job.id, removed)
        except Exception as exc:
            log.warning("job %s: clearing its artifacts failed: %s", item.job_id, exc)
        finally:
            self.syncing.discard(item.job_id)
            self.state.kick()

    async def _ticker(self) -> None:
        while True:
            await anyio.sleep(TICK)
            try:
                self._due_now(time.time())
            except Exception:
                log.exception("artifact sync tick failed")

    def _due_now(self, now: float) -> None:
        """Queue a periodic sync for every running attempt whose last one is
        `artifact_sync` old."""
        state = self.state
        interval = state.config.queue.artifact_sync
        for job, node in state.started_on_up_nodes():
            assert job.started_at is not None  # started_on_up_nodes: started ones only
            last = self.artifacts.last_sync.get(job.id, job.started_at)
            if now - last >= interval:
                self._periodic(node.name, job.id)
