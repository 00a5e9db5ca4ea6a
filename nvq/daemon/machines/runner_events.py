"""The runner side of the daemon: what each node's link reports (hello, samples,
journaled job events, busy reports, artifact manifests) turned into transitions, and
the reconciliation that makes a (re)connected runner and the database agree."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, get_args

import anyio
import msgspec

from nvq.config.lease import effective_lease
from nvq.daemon.core import store_behind
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.held import Held, locked
from nvq.daemon.core.journaled import apply_journaled
from nvq.daemon.core.nodes import NodeRuntime, Sender
from nvq.daemon.core.reconcile import reconcile
from nvq.daemon.core.recovery import Recovery
from nvq.daemon.core.state import State
from nvq.daemon.machines import blobs
from nvq.daemon.machines.contention_watch import ContentionWatch
from nvq.daemon.machines.image_staging import LISTED, STAGED
from nvq.daemon.machines.reassign import Reassigner
from nvq.daemon.machines.unreachable import node_reassign_at
from nvq.daemon.placement.views import capacity_grew
from nvq.domain.card_health import unhealthy_events
from nvq.model import NewAlert, NewEvent, Tx
from nvq_runner import protocol as p

log = logging.getLogger("nvq.daemon")

_JOURNALED: tuple[type, ...] = get_args(p.JournaledEvent)


class ArtifactMessages(Protocol):
    """The artifacts wing's door (`nvq.daemon.artifacts.runner_messages`), above this one."""

    def on_manifest(self, msg: p.ArtifactsManifest) -> None: ...
    def on_tree(self, msg: p.ArtifactsTreeReply) -> None: ...
    def on_chunk(self, msg: p.ChunkBytes) -> None: ...
    def on_sync_wanted(self, node: NodeRuntime, msg: p.SyncWanted) -> None: ...


class RelayDoor(Protocol):
    """Jobs' own requests, relayed from $NVQ_SOCKET (`nvq.daemon.sessions.relay.Relays`)."""

    def on_up(self, node: NodeRuntime, msg: p.RelayUp) -> None: ...
    def drop(self, node: NodeRuntime) -> None: ...


class RunnerEvents:
    """What every node link calls (`nvq.daemon.machines.link`)."""

    def __init__(
        self,
        state: State,
        machines: Reassigner,
        artifacts: ArtifactMessages,
        relays: RelayDoor,
        contention: ContentionWatch | None = None,
    ) -> None:
        self.state = state
        self.contention = contention
        self.machines = machines
        self.artifacts = artifacts
        # Nodes whose replay of unacknowledged events is under way: it ends with the
        # first frame after it that is not a journaled event (the runner writes Hello
        # and the whole replay before anything else).
        self._replaying: set[str] = set()
        self.recovery = Recovery(state)  # jobs queue.db forgot, asked of their node
        self.relays = relays

    def find_node(self, name: str) -> NodeRuntime:
        return self.state.find_node(name)

    async def on_connected(self, node: NodeRuntime, send: Sender) -> None:
        node.send = send
        node.state = "connecting"
        node.reconciled = False
        self._replaying.discard(node.name)

    async def on_disconnected(self, node: NodeRuntime, error: str | None) -> None:
        node.send = None
        node.reconciled = False
        self._replaying.discard(node.name)
        if node.sample is not None:
            node.last_sample = node.sample
        node.sample = None
        if node.state == "up":
            log.warning("node %s disconnected: %s", node.name, error)
            node.state = "connecting"
        node.error = error
        for req, deliver in list(node.log_streams.items()):
            deliver(p.LogData(req=req, eof=True, error=f"node {node.name} disconnected"))
        node.log_streams.clear()
        self.relays.drop(node)

    async def check_down(self, node: NodeRuntime) -> None:
        """A node unreachable for longer than `node_grace` is down: say so once. An error
        that retrying cannot fix (a host key, authentication) is alerted at once."""
        if node.state == "down" or node.down_since is None:
            return
        if node.error_permanent and node.error:
            await self._refused(node, node.error)
        if time.time() < self.reassign_at(node) or node.state == "down":
            return  # (down: the watcher and the link may both have come here)
        node.state = "down"
        async with locked(self.state) as held:
            tx = Tx(
                events=[
                    NewEvent(
                        "node_down",
                        None,
                        node.name,
                        # last_seen names this outage: its alert is raised once.
                        {"error": node.error, "last_seen": node.last_seen},
                    )
                ]
            )
            # Its running jobs go back to the queue (or are lost, with --no-reassign),
            # in the same transaction; their old attempts are owed a kill (reaps).
            await self.machines.reassign_down(held, node, tx, time.time())
        log.warning("node %s is down: %s", node.name, node.error)

    async def _refused(self, node: NodeRuntime, error: str) -> None:
        # Keyed by outage and message (alerts.py): a retry's same refusal is not a new alert.
        said = f"{node.last_seen}:{error}"
        if node.refused_alerted == said:
            return
        node.refused_alerted = said
        data = {"error": error, "last_seen": node.last_seen}
        event = NewEvent("node_refused", None, node.name, data)
        async with locked(self.state) as held:
            await held.commit(Tx(events=[event]))

    def lease(self) -> float | None:
        queue = self.state.config.queue
        return effective_lease(queue.lease, queue.node_grace, queue.kill_grace)

    def reassign_at(self, node: NodeRuntime) -> float:
        """When the lease rule first lets this unreachable node's jobs run elsewhere."""
        return node_reassign_at(self.state, node)

    async def watch_down(self) -> None:
        """Declare each unreachable node down as soon as the rule allows, whatever its
        link is doing meanwhile (a connect attempt may hang for ssh_connect_timeout,
        a retry may wait 30 s): at most a second late."""
        while True:
            now = time.time()
            due = [n for n in self.state.nodes.values()
                   if n.state != "down" and n.down_since is not None and n.send is None]
            for node in due:
                if now >= self.reassign_at(node):
                    try:
                        await self.check_down(node)
                    except Exception:
                        log.exception("node %s: declaring it down failed", node.name)
            waits = [self.reassign_at(n) - now for n in due if n.state != "down"]
            await anyio.sleep(min([1.0, *(w for w in waits if w > 0)]) if waits else 1.0)

    async def wait_unignored(self, node: NodeRuntime) -> None:
        while node.ignored:
            changed = self.state.changed
            await changed.wait()

    async def on_messages(self, node: NodeRuntime, msgs: Sequence[p.RunnerMsg]) -> None:
        """What one read of the link delivered, in order: each run of journaled events
        goes to `apply_journaled` whole (it commits what it can together), everything
        else one by one."""
        i = 0
        while i < len(msgs):
            run: list[p.JournaledEvent] = []
            while i + len(run) < len(msgs) and isinstance(msgs[i + len(run)], _JOURNALED):
                run.append(msgs[i + len(run)])  # type: ignore[arg-type]
            if len(run) >= 2:
                node.mark_seen()
                await self._journaled(node, run)
                i += len(run)
                continue
            await self.on_message(node, msgs[i])
            i += 1

    async def on_message(self, node: NodeRuntime, msg: p.RunnerMsg) -> None:
        node.mark_seen()
        if node.name in self._replaying and not isinstance(msg, (p.Hello, *_JOURNALED)):
            await self._replayed(node)
        answer = RUNNER_MESSAGES.get(type(msg))
        if answer is None:  # a union member without a row: tests/daemon/test_runner_messages.py
            raise TypeError(f"no answer registered for runner message {type(msg).__name__}")
        await answer(self, node, msg)

    # One answer per runner message, registered in RUNNER_MESSAGES below.

    async def _sample(self, node: NodeRuntime, msg: p.Sample) -> None:
        previous = node.sample
        self._on_sample(node, msg)
        if sick := unhealthy_events(node.name, previous, msg, node.card_marks):
            async with locked(self.state) as held:
                await held.commit(Tx(events=sick))

    async def _log_data(self, node: NodeRuntime, msg: p.LogData) -> None:
        deliver = node.log_streams.get(msg.req)
        if deliver is not None:
            if msg.eof:
                node.log_streams.pop(msg.req, None)
            deliver(msg)

    async def _manifest(self, node: NodeRuntime, msg: p.ArtifactsManifest) -> None:
        self.artifacts.on_manifest(msg)

    async def _busy(self, node: NodeRuntime, msg: p.Busy) -> None:
        await self.machines.on_busy(node, msg)

    async def _need_blobs(self, node: NodeRuntime, msg: p.NeedBlobs) -> None:
        await blobs.serve(node, self.state.home, msg)

    async def _tree_reply(self, node: NodeRuntime, msg: p.ArtifactsTreeReply) -> None:
        self.artifacts.on_tree(msg)

    async def _chunk_bytes(self, node: NodeRuntime, msg: p.ChunkBytes) -> None:
        self.artifacts.on_chunk(msg)

    async def _sync_wanted(self, node: NodeRuntime, msg: p.SyncWanted) -> None:
        self.artifacts.on_sync_wanted(node, msg)

    async def _recovered(self, node: NodeRuntime, msg: p.Recovered) -> None:
        self.recovery.answer(msg)

    async def _relay_up(self, node: NodeRuntime, msg: p.RelayUp) -> None:
        self.relays.on_up(node, msg)

    async def _lease_held(self, node: NodeRuntime, msg: p.LeaseHeld) -> None:
        node.lease_book.held(msg.seq)

    async def _node_images(self, node: NodeRuntime, msg: p.NodeImages) -> None:
        node.images = msg
        LISTED.answer(msg.req, msg)

    async def _image_staged(self, node: NodeRuntime, msg: p.ImageStaged) -> None:
        STAGED.answer(msg.req, msg)

    async def _journaled_one(self, node: NodeRuntime, msg: p.JournaledEvent) -> None:
        await self._journaled(node, [msg])

    def _on_sample(self, node: NodeRuntime, sample: p.Sample) -> None:
        previous, node.sample = node.sample, sample
        seen = node.progress_seen
        for job_id, line in sample.progress.items():
            job = self.state.jobs.get(job_id)
            if job is not None and job.node == node.name:
                job.progress = line
        if self.contention is not None:
            self.contention.on_sample(node.name, sample)
        node.progress_seen = {
            job_id: seen[job_id] if job_id in seen and seen[job_id][0] == line else (line, sample.time)
            for job_id, line in sample.progress.items()
        }
        # Samples arrive from every node every few seconds; a placement pass over a
        # long queue is only worth it when a node may now hold more than before.
        if capacity_grew(previous, sample):
            self.state.kick()

    async def _on_hello(self, node: NodeRuntime, hello: p.Hello) -> None:
        async with locked(self.state) as held:
            node.hello = hello
            node.state = "up"
            node.error = None
            node.down_since = None
            if hello.journal_id != node.journal_id:
                if node.journal_id:
                    log.warning("node %s has a new journal: seqs restart", node.name)
                node.journal_id = hello.journal_id
                node.applied_seq = 0
            node.replay_until = hello.journal_head
            await self.state.store.save_node(
                node.name, facts=msgspec.to_builtins(hello), last_seen=node.last_seen
            )
            tx = Tx(events=[NewEvent("node_up", None, node.name, {"hostname": hello.hostname})])
            forgotten = await self.recovery.forgotten(held, hello)
            unknown_ids = await self._ids_seen(held, node, hello)
            # A runner that keeps start records is asked first: one alert then says
            # what came back, and this one only if ids stay unknown.
            if not self.recovery.begin(held, node, forgotten, unknown_ids) and unknown_ids:
                tx.alerts = [*tx.alerts, unknown_ids]
            await held.commit(tx, Effects(kick=True))
            log.info(
                "node %s up (runner %s, %d GPUs, journal %d, applied %d)",
                node.name,
                hello.runner_version,
                len(hello.gpus),
                hello.journal_head,
                node.applied_seq,
            )
            owner = self.machines.owner_msg(node)
            if owner is not None:
                node.post(owner)
            if node.applied_seq >= hello.journal_head:
                await self._reconcile(held, node)
            else:
                self._replaying.add(node.name)

    async def _ids_seen(
        self, held: Held, node: NodeRuntime, hello: p.Hello
    ) -> NewAlert | None:
        """Job ids continue after the highest any runner has seen, so a restored or
        damaged queue.db never gives an old job's id (and output) to a new job. Ids it
        never assigned are what it lost: kept for `queue check`, and the alert that
        says so returned."""
        known = await self.state.store.last_job_id()
        alert = store_behind.hello_alert(node.name, hello, known)
        if alert is None:
            return None
        log.error("%s", alert.message)
        self.state.store_behind.missing.setdefault(node.name, set()).update(
            range(known + 1, hello.max_job_id + 1)
        )
        await self.state.store.raise_last_id(hello.max_job_id)
        return alert

    async def _replayed(self, node: NodeRuntime) -> None:
        """The runner's replay is over: whatever seq queue.db applied last (a restored
        store may be behind or ahead of what the runner kept), the node is reconciled."""
        async with locked(self.state) as held:
            self._replaying.discard(node.name)
            if node.send is not None and not node.reconciled:
                await self._reconcile(held, node)

    async def _reconcile(self, held: Held, node: NodeRuntime) -> None:
        await reconcile(held, self.recovery, node)

    async def _journaled(self, node: NodeRuntime, evs: Sequence[p.JournaledEvent]) -> None:
        replaying = node.name in self._replaying
        await apply_journaled(self.state, node, evs, replaying=replaying,
                              reconcile=self._reconcile)


# What answers each runner message, one row per member of `p.RunnerMsg` (held
# complete by tests/daemon/test_runner_messages.py): the method names the wing it
# hands the message to. Journaled events that arrive in a run skip this table
# (`on_messages` gives the run to `apply_journaled` whole).
Answer = Callable[[RunnerEvents, NodeRuntime, Any], Awaitable[None]]
RUNNER_MESSAGES: dict[type[p.RunnerMsg], Answer] = {
    p.Hello: RunnerEvents._on_hello,
    p.Sample: RunnerEvents._sample,
    p.LogData: RunnerEvents._log_data,
    p.ArtifactsManifest: RunnerEvents._manifest,
    p.Busy: RunnerEvents._busy,
    p.NeedBlobs: RunnerEvents._need_blobs,
    p.ArtifactsTreeReply: RunnerEvents._tree_reply,
    p.ChunkBytes: RunnerEvents._chunk_bytes,
    p.SyncWanted: RunnerEvents._sync_wanted,
    p.Recovered: RunnerEvents._recovered,
    p.RelayUp: RunnerEvents._relay_up,
    p.LeaseHeld: RunnerEvents._lease_held,
    p.NodeImages: RunnerEvents._node_images,
    p.ImageStaged: RunnerEvents._image_staged,
    **{event: RunnerEvents._journaled_one for event in _JOURNALED},
}
