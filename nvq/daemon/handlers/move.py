"""`nvq job move ID NODE[:GPU]`: pin a job to a node or one of its cards; a running job
is stopped and runs there as a new attempt (see `nvq.domain.move`)."""

from __future__ import annotations

import msgspec

from nvq import control as c
from nvq.daemon.core.apply import apply, check_allowed
from nvq.daemon.core.errors import BadRequest, RequestError, map_exceptions
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement.pinning import lane_tail
from nvq.daemon.placement.submit_checks import check_runnable
from nvq.domain import move as moving
from nvq.domain import request
from nvq.domain.lanes import lane_name
from nvq.domain.permissions import owner
from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord, JobState, Outcome


def resolve(state: State, to: str) -> tuple[str, int | None]:
    """`node` or `node:gpu` → (the node's full name, the card or None). Unknown ones
    are the user's to fix: exit 2, naming what exists."""
    name, colon, card = to.partition(":")
    if not name:
        raise BadRequest(f"move to {to!r}: expected NODE or NODE:GPU, e.g. box406:0")
    try:
        node = state.find_node(name)
    except RequestError as exc:
        raise BadRequest(str(exc)) from None
    if not colon:
        return node.name, None
    if not card.isdigit():
        raise BadRequest(f"move to {to!r}: the GPU must be a card's index, e.g. {node.name}:0")
    gpu = int(card)
    if node.hello is not None and gpu not in {g.index for g in node.hello.gpus}:
        have = ", ".join(str(g.index) for g in node.hello.gpus) or "none"
        raise BadRequest(f"move to {to!r}: node {node.name} has no GPU {gpu} (GPUs: {have})")
    return node.name, gpu


@handles(c.Move, may=owner("move"))
async def move(ctx: Context, req: c.Move, user: str) -> c.Moved:
    state = ctx.state
    async with locked(state) as held:
        job = await state.get_job(req.id)
        check_allowed(state, [job], user, "move")
        node, gpu = resolve(state, req.to)
        where = node if gpu is None else lane_name(node, gpu)
        if moving.already_there(job, node, gpu):
            raise RequestError(f"job {job.id} already runs on {where}")
        lane_pos = None if gpu is None else lane_tail(state, lane_name(node, gpu))
        with map_exceptions():
            fields = moving.target_fields(job, node, gpu, lane_pos)
        if not job.state.finished:
            # As at submit: a pin no card there could ever hold is refused, not queued.
            as_waiting = msgspec.structs.replace(request.replaced(job, fields), state=JobState.PENDING)
            check_runnable(state, ctx.memory, ctx.machines, as_waiting)

        def move_one(one: JobRecord) -> Outcome:
            if one.state.finished:
                raise TransitionError(f"job {one.id} has already ended ({one.state})")
            return moving.move(one, fields, to=where, by=user)

        (moved,) = await apply(held, [job], move_one)
    stopped = f"attempt {job.attempt} on {job.node}" if job.state is JobState.RUNNING else None
    fields = request.fields_of(moved)
    return c.Moved(**fields, to=where, stopped=stopped)
