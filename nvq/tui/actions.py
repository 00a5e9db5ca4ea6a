"""What each key does to the selected job or node, through the client: which actions
ask first (those that destroy work), and the one client call each makes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nvq.client import ClientError
from nvq.client.asynchronous import AsyncClient
from nvq.model import Job, JobState


@dataclass(frozen=True)
class JobAction:
    said: str  # "cancelled": for the line the UI shows afterwards
    run: Callable[[AsyncClient, Job], Awaitable[object]]
    ask: Callable[[Job], str | None] = lambda job: None  # the question, when one is due


def _ask_cancel(job: Job) -> str | None:
    if job.state.finished:
        return None  # the daemon refuses; nothing to lose by asking it
    return f"Cancel job {job.id} ({job.name or job.command[:30]}), now {job.state}?"


def _ask_pause(job: Job) -> str | None:
    if job.state is JobState.RUNNING:
        return f"Pause job {job.id}? It is running: its process is stopped and it waits again."
    return None


async def _lane_move(client: AsyncClient, job: Job, step: int) -> object:
    if not job.lane:
        raise ClientError(f"job {job.id} is in no lane")
    detail = await client.lane(job.lane)
    positions = {int(doc["id"]): int(doc["position"]) for doc in detail.jobs}
    if job.id not in positions:
        raise ClientError(f"job {job.id} is not waiting in lane {job.lane}")
    to = max(1, positions[job.id] + step)
    return await client.lane(job.lane, "move", [job.id], to=str(to))


JOB_ACTIONS: dict[str, JobAction] = {
    "cancel": JobAction("cancelled", lambda q, j: q.cancel(j.id), _ask_cancel),
    "pause": JobAction("paused", lambda q, j: q.pause(j.id), _ask_pause),
    "resume": JobAction("resumed", lambda q, j: q.resume(j.id)),
    "requeue": JobAction("requeued", lambda q, j: q.requeue(j.id)),
    "priority_up": JobAction("raised", lambda q, j: q.priority(j.id, "+1")),
    "priority_down": JobAction("lowered", lambda q, j: q.priority(j.id, "-1")),
    "lane_up": JobAction("moved up its lane", lambda q, j: _lane_move(q, j, -1)),
    "lane_down": JobAction("moved down its lane", lambda q, j: _lane_move(q, j, +1)),
}


async def note(client: AsyncClient, job: Job, text: str) -> Job:
    if text:
        return await client.note(job.id, text)
    return await client.note(job.id, clear=True)


async def node_flag(client: AsyncClient, node: str, action: str) -> str:
    view = await client.node_flag(node, "drained", action == "drain")
    return f"node {view.name} " + ("draining" if action == "drain" else "accepting jobs")
