"""A runner began or finished a job's `--setup` (`SetupPhase`, journaled): the job's
`phase` is "setup" in between (`job ls` shows the state `setup`; its cards stay
held), with the events `setup_started` and `setup_done`, applied exactly once as every
journaled event is (the node's seq commits with them). A failed setup arrives as a
`LaunchFailed` with `phase="setup"` (nvq.domain.transitions.launch_failed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.state import State
from nvq.model import Job, JobState, NewEvent, NodeSeq, Tx
from nvq_runner import protocol as p


def applied(job: Job, ev: p.SetupPhase, node: str) -> tuple[Job | None, NewEvent | None]:
    """Pure: the job and event a `SetupPhase` makes (None, None: a stale report)."""
    if job.state is not JobState.RUNNING or job.attempt != ev.attempt or job.node != node:
        return None, None
    if ev.done:
        data: dict[str, object] = {"attempt": ev.attempt}
        if ev.cached:
            data["cached"] = True
        return (msgspec.structs.replace(job, phase=""),
                NewEvent("setup_done", job.id, node, data))
    return (msgspec.structs.replace(job, phase="setup"),
            NewEvent("setup_started", job.id, node, {"attempt": ev.attempt}))


async def on_setup_phase(
    state: State, node: NodeRuntime, ev: p.SetupPhase,
    reconcile: Callable[[NodeRuntime], Awaitable[None]],
) -> None:
    async with state.lock:
        if ev.seq <= node.applied_seq:
            node.post(p.Ack(ev.seq))
            return
        tx = Tx(node_seq=NodeSeq(node.name, node.journal_id, ev.seq))
        job = state.jobs.get(ev.job_id)
        if job is not None:
            new, event = applied(job, ev, node.name)
            if new is not None and event is not None:
                tx.jobs = [new]
                tx.events = [event]
        await state.commit(tx)
        node.applied_seq = ev.seq
        node.post(p.Ack(ev.seq))
        if not node.reconciled and ev.seq >= node.replay_until:
            await reconcile(node)
