"""`nvq queue lanes` / `nvq queue lane L …`: the daemon applying `nvq.domain.lanes`.

A lane's order is its queued jobs' `lane_pos`; every reordering renumbers the lane
1..n in one transaction with a `lane_reordered` event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from nvq.daemon.policy import _error, lane_statuses
from nvq.domain import deps, lanes, permissions
from nvq.domain.transitions import TransitionError
from nvq.model import Job, JobState, NewEvent, Tx

if TYPE_CHECKING:
    from nvq.daemon.core import Core


def resolve(core: Core, text: str) -> str:
    try:
        prefix, gpu = lanes.parse_lane(text)
    except lanes.LaneError as exc:
        raise _error(str(exc)) from None
    node = core.find_node(prefix)
    return lanes.lane_name(node.name, gpu)


async def _dep_status(core: Core) -> dict[int, deps.DepStatus]:
    waiting = [
        j
        for j in core.jobs.values()
        if j.lane is not None and j.state is JobState.PENDING and (j.after or j.after_any)
    ]
    states = await core._dependency_states(waiting)
    return {j.id: deps.dependency_status(j, states) for j in waiting}


def _status_doc(core: Core, st: lanes.LaneStatus) -> dict[str, Any]:
    node, gpu = lanes.parse_lane(st.lane)
    blocked = st.blocked
    if blocked is None and st.next is not None:
        blocked = core.lane_blocked.get(st.lane)
    return {
        "lane": st.lane,
        "node": node,
        "gpu": gpu,
        "running": st.running,
        "next": st.queue,
        "paused": st.paused,
        "blocked": blocked,
    }


async def lanes_view(core: Core) -> list[dict[str, Any]]:
    """Every GPU of every known node, plus any lane that still has jobs."""
    statuses = {s.lane: s for s in lane_statuses(core, await _dep_status(core))}
    names = set(statuses)
    for node in core.nodes.values():
        if node.hello is not None and not node.ignored:
            names.update(lanes.lane_name(node.name, g.index) for g in node.hello.gpus)
    docs = []
    for name in sorted(names, key=lambda n: (n.rsplit(":", 1)[0], int(n.rsplit(":", 1)[1]))):
        st = statuses.get(name) or lanes.LaneStatus(
            lane=name,
            running=_running_on_card(core, name),
            paused=core.lane_paused.get(name, False),
        )
        docs.append(_status_doc(core, st))
    return docs


def _running_on_card(core: Core, lane: str) -> int | None:
    node, gpu = lanes.parse_lane(lane)
    return next(
        (
            j.id
            for j in core.jobs.values()
            if j.state is JobState.RUNNING and j.node == node and gpu in j.gpus
        ),
        None,
    )


async def lane_view(core: Core, text: str) -> dict[str, Any]:
    name = resolve(core, text)
    statuses = {s.lane: s for s in lane_statuses(core, await _dep_status(core))}
    st = statuses.get(name) or lanes.LaneStatus(
        lane=name, running=None, paused=core.lane_paused.get(name, False)
    )
    doc = _status_doc(core, st)
    doc["running_job"] = core.jobs.get(st.running) if st.running is not None else None
    doc["jobs"] = [
        {"position": n, **msgspec.to_builtins(core.jobs[i])}
        for n, i in enumerate(st.queue, start=1)
    ]
    return doc


async def lane_action(
    core: Core,
    text: str,
    action: str,
    ids: list[int],
    *,
    to: str | None,
    before: int | None,
    at: str | None,
    user: str,
) -> dict[str, Any]:
    async with core._lock:
        name = resolve(core, text)
        queued = lanes.queued_order([j for j in core.jobs.values() if j.lane == name])
        order = [j.id for j in queued]
        tx = Tx()
        try:
            if action in ("pause", "resume"):
                paused = action == "pause"
                tx.lanes.append((name, paused))
                tx.events.append(
                    NewEvent(f"lane_{action}d", None, None, {"lane": name, "by": user})
                )
            else:
                new_order = _reorder(core, name, action, ids, order, to=to, before=before, at=at)
                moved = _renumber(core, name, new_order, user)
                tx.jobs.extend(moved)
                tx.events.append(
                    NewEvent(
                        "lane_reordered",
                        None,
                        None,
                        {"lane": name, "action": action, "order": new_order, "by": user},
                    )
                )
        except (lanes.LaneError, TransitionError) as exc:
            raise _error(str(exc)) from None
        await core._commit(tx)
    core.kick()
    return await lane_view(core, name)


def _reorder(
    core: Core,
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
            raise lanes.LaneError(f"{action} takes one job id")
        job_id = ids[0]
        job = core.jobs.get(job_id)
        if job is not None and job.state is JobState.RUNNING:
            raise lanes.LaneError(f"job {job_id} is running: a running job cannot be reordered")
        return job_id

    if action == "move":
        job_id = one()
        if (to is None) == (before is None):
            raise lanes.LaneError("move takes --to head|N or --before ID")
        if before is not None:
            return lanes.move_before(order, job_id, before)
        return lanes.move_to(order, job_id, to or "head")
    if action == "swap":
        if len(ids) != 2:
            raise lanes.LaneError("swap takes two job ids")
        return lanes.swap(order, ids[0], ids[1])
    if action == "skip":
        return lanes.skip(order)
    if action == "assign":
        job_id = one()
        job = core.jobs.get(job_id)
        if job is None or job.state not in (JobState.PENDING, JobState.HELD, JobState.PAUSED):
            raise lanes.LaneError(f"job {job_id} is not waiting: only a queued job can be assigned")
        if job.gpus_requested != 1:
            raise lanes.LaneError(f"job {job_id} needs {job.gpus_requested} GPUs; a lane has one")
        return lanes.assign(order, job_id, at or "tail")
    raise lanes.LaneError(
        f"unknown lane action {action!r}: move, swap, skip, assign, pause or resume"
    )


def _renumber(core: Core, name: str, order: list[int], user: str) -> list[Job]:
    positions = lanes.numbered(order)
    changed: list[Job] = []
    for job_id, pos in positions.items():
        job = core.jobs[job_id]
        if job.lane != name:
            permissions.check([job], user, core.config.queue.admins, "assign")
        if job.lane != name or job.lane_pos != pos:
            changed.append(msgspec.structs.replace(job, lane=name, lane_pos=pos, node_request=None))
    return changed
