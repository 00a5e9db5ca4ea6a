"""`nvq queue lanes` / `nvq queue lane L …`: the daemon applying `nvq.domain.lanes`.

A lane's order is its queued jobs' `lane_pos`; every reordering renumbers the lane
1..n in one transaction with a `lane_reordered` event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from nvq import control as c
from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import BadRequest, map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement.placing import dependency_states, lane_statuses
from nvq.domain import deps, lanes, permissions, request
from nvq.domain.permissions import ANYONE, admin, owner
from nvq.model import JobRecord, JobState, NewEvent, Tx


def resolve(state: State, text: str) -> str:
    with map_exceptions({lanes.LaneError: BadRequest}):  # a malformed name: bad input
        prefix, gpu = lanes.parse_lane(text)
    node = state.find_node(prefix)
    # A node that has not reported its cards yet might have this one.
    cards = {g.index for g in node.hello.gpus} if node.hello is not None else None
    if cards is not None and gpu not in cards:
        have = ", ".join(map(str, sorted(cards))) or "none"
        raise BadRequest(f"lane {text}: node {node.name} has no GPU {gpu} (GPUs: {have})")
    return lanes.lane_name(node.name, gpu)


async def _dep_status(state: State) -> dict[int, deps.DepStatus]:
    waiting = [
        j
        for j in state.jobs.values()
        if j.spec.lane is not None and j.state is JobState.PENDING and (j.spec.after or j.spec.after_any)
    ]
    states = await dependency_states(state, waiting)
    return {j.id: deps.dependency_status(j, states) for j in waiting}


def _status_doc(
    state: State, st: lanes.LaneStatus, blocked: Mapping[str, str]
) -> dict[str, Any]:
    node, gpu = lanes.parse_lane(st.lane)
    why = st.blocked
    if why is None and st.next is not None:
        why = _node_block(state, node) or blocked.get(st.lane)
    return {
        "lane": st.lane,
        "node": node,
        "gpu": gpu,
        "running": st.running,
        "next": st.queue,
        "paused": st.paused,
        "blocked": why,
    }


def _node_block(state: State, name: str) -> str | None:
    """Why a lane with a job to start cannot start it on its node: `node down`,
    `node connecting`, `node draining`, `node stopped`, `node ignored` (None: up)."""
    node = state.nodes.get(name)
    if node is None:
        return "node unknown"
    shown = node.shown_state
    if shown == "up" and node.reconciled:
        return None
    return f"node {'connecting' if shown == 'up' else shown}"


async def lanes_view(state: State, blocked: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every GPU of every known node, plus any lane that still has jobs."""
    statuses = {s.lane: s for s in lane_statuses(state, await _dep_status(state))}
    names = set(statuses)
    for node in state.nodes.values():
        if node.hello is not None and not node.ignored:
            names.update(lanes.lane_name(node.name, g.index) for g in node.hello.gpus)
    docs = []
    for name in sorted(names, key=lambda n: (n.rsplit(":", 1)[0], int(n.rsplit(":", 1)[1]))):
        st = statuses.get(name) or lanes.LaneStatus(
            lane=name,
            running=_running_on_card(state, name),
            paused=state.lane_paused.get(name, False),
        )
        docs.append(_status_doc(state, st, blocked))
    return docs


def _running_on_card(state: State, lane: str) -> int | None:
    node, gpu = lanes.parse_lane(lane)
    return next(
        (
            j.id
            for j in state.jobs.values()
            if j.state is JobState.RUNNING and j.node == node and gpu in j.gpus
        ),
        None,
    )


async def lane_view(state: State, text: str, blocked: Mapping[str, str]) -> dict[str, Any]:
    name = resolve(state, text)
    statuses = {s.lane: s for s in lane_statuses(state, await _dep_status(state))}
    st = statuses.get(name) or lanes.LaneStatus(
        lane=name, running=None, paused=state.lane_paused.get(name, False)
    )
    doc = _status_doc(state, st, blocked)
    running = state.jobs.get(st.running) if st.running is not None else None
    doc["running_job"] = request.view_of(running) if running is not None else None
    doc["jobs"] = [
        {"position": n, **msgspec.to_builtins(request.view_of(state.jobs[i]))}
        for n, i in enumerate(st.queue, start=1)
    ]
    return doc


@handles(c.Lanes, may=ANYONE)
async def lanes_request(ctx: Context, req: c.Lanes, user: str) -> list[c.LaneStatus]:
    return msgspec.convert(await lanes_view(ctx.state, ctx.memory.lane_blocked), list[c.LaneStatus])


@handles(c.Lane, may=lambda r: (
    ANYONE
    if r.action is None
    else admin(f"{r.action} a lane")
    if r.action in ("pause", "resume")
    else owner(f"{r.action} in a lane")
))
async def lane_request(ctx: Context, req: c.Lane, user: str) -> c.LaneDetail:
    if req.action is None:
        return msgspec.convert(
            await lane_view(ctx.state, req.lane, ctx.memory.lane_blocked), c.LaneDetail
        )
    name = await lane_action(
        ctx.state, req.lane, req.action, req.ids, to=req.to, before=req.before, at=req.at, user=user
    )
    return msgspec.convert(await lane_view(ctx.state, name, ctx.memory.lane_blocked), c.LaneDetail)


async def lane_action(
    state: State,
    text: str,
    action: str,
    ids: list[int],
    *,
    to: str | None,
    before: int | None,
    at: str | None,
    user: str,
) -> str:
    """Carry out `action` on a lane; its resolved name."""
    async with locked(state) as held:
        name = resolve(state, text)
        queued = lanes.queued_order([j for j in state.jobs.values() if j.spec.lane == name])
        order = [j.id for j in queued]
        tx = Tx()
        with map_exceptions():
            if action in ("pause", "resume"):
                paused = action == "pause"
                tx.lanes.append((name, paused))
                tx.events.append(
                    NewEvent(f"lane_{action}d", None, None, {"lane": name, "by": user})
                )
            else:
                new_order = _reorder(state, name, action, ids, order, to=to, before=before, at=at)
                moved = _renumber(state, name, new_order, user)
                tx.jobs.extend(moved)
                tx.events.append(
                    NewEvent(
                        "lane_reordered",
                        None,
                        None,
                        {"lane": name, "action": action, "order": new_order, "by": user},
                    )
                )
        await held.commit(tx, Effects(kick=True))
    return name


def _reorder(
    state: State,
    name: str,
    action: str,
    ids: list[int],
    order: list[int],
    *,
    to: str | None,
    before: int | None,
    at: str | None,
) -> list[int]:
    def one() -> int:
        if len(ids) != 1:
            raise BadRequest(f"{action} takes one job id")
        job_id = ids[0]
        job = state.jobs.get(job_id)
        if job is not None and job.state is JobState.RUNNING:
            raise lanes.LaneError(f"job {job_id} is running: a running job cannot be reordered")
        return job_id

    if action == "move":
        job_id = one()
        if (to is None) == (before is None):
            raise BadRequest("move takes --to head|N or --before ID")
        if before is not None:
            return lanes.move_before(order, job_id, before)
        return lanes.move_to(order, job_id, to or "head")
    if action == "swap":
        if len(ids) != 2:
            raise BadRequest("swap takes two job ids")
        return lanes.swap(order, ids[0], ids[1])
    if action == "skip":
        return lanes.skip(order)
    if action == "assign":
        job_id = one()
        job = state.jobs.get(job_id)
        if job is None or job.state not in (JobState.PENDING, JobState.HELD, JobState.PAUSED):
            raise lanes.LaneError(f"job {job_id} is not waiting: only a queued job can be assigned")
        if job.spec.gpus != 1:
            raise lanes.LaneError(f"job {job_id} needs {job.spec.gpus} GPUs; a lane has one")
        return lanes.assign(order, job_id, at or "tail")
    # a word the command does not know is bad input (exit 2), as an unknown option is
    raise BadRequest(
        f"unknown lane action {action!r}: move, swap, skip, assign, pause or resume"
    )


def _renumber(state: State, name: str, order: list[int], user: str) -> list[JobRecord]:
    positions = lanes.numbered(order)
    changed: list[JobRecord] = []
    for job_id, pos in positions.items():
        job = state.jobs[job_id]
        if job.spec.lane != name:
            permissions.check([job], user, queue_admins(state), "assign")
        if job.spec.lane != name or job.lane_pos != pos:
            changed.append(
                msgspec.structs.replace(request.asking(job, lane=name, node=None), lane_pos=pos)
            )
    return changed
