"""`nvq job move ID NODE[:GPU]`: where a job is to run, changed by a person. Pure.

A waiting job (pending, held, paused) is pinned there and keeps its state and place.
A running one is stopped like a preempted job (TERM, grace, KILL; the kill is a reap
owed to its node), goes back to `pending` pinned to the target, and is placed there
as a new attempt once the old one has exited and its artifacts are synced (the reap's
reason is one of `reassign.STOPPING_REASONS`). `NODE:GPU` puts it at the tail of that
card's lane: the lane is how the queue binds a job to one card."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.domain import request
from nvq.domain.lanes import lane_name
from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord, JobState, NewEvent, Outcome, Reap

WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})
REAP_REASON = "moved"


def target_fields(job: JobRecord, node: str, gpu: int | None, lane_pos: float | None) -> dict[str, Any]:
    """The fields (named as `Job` names them) that pin `job` to `node` (a full name), or to its card `gpu`
    (that card's lane, at `lane_pos`). A lane runs one card's jobs: only a job of one
    GPU fits."""
    if gpu is None:
        return {"node_request": node, "lane": None, "lane_pos": None}
    if job.spec.gpus != 1:
        raise TransitionError(
            f"job {job.id} asks for {job.spec.gpus} GPUs: only a job of one GPU can be "
            f"moved to one card; give the node alone ({node})"
        )
    return {"node_request": None, "lane": lane_name(node, gpu), "lane_pos": lane_pos}


def already_there(job: JobRecord, node: str, gpu: int | None) -> bool:
    """A running job that already runs where it is asked to move to."""
    if job.state is not JobState.RUNNING or job.node != node:
        return False
    return gpu is None or job.gpus == [gpu]


def move(job: JobRecord, fields: dict[str, Any], *, to: str, by: str) -> Outcome:
    """Pin `job` to `to` (`fields` from `target_fields`); a running job is stopped and
    re-placed there as a new attempt. One `job_moved` event with before and after."""
    before = {k: request.shown(job, k) for k in fields}
    data: dict[str, Any] = {"to": to, "before": before, "after": fields, "by": by}
    data["was"] = str(job.state)
    if job.state in WAITING:
        new = request.replaced(job, fields)
        return Outcome(new, [NewEvent("job_moved", job.id, None, data)])
    if job.state is not JobState.RUNNING or job.node is None:
        raise TransitionError(f"job {job.id} cannot be moved: it is {job.state}")
    reap = Reap(job_id=job.id, attempt=job.attempt, node=job.node, reason=REAP_REASON)
    new = msgspec.structs.replace(
        request.replaced(job, fields),
        state=JobState.PENDING,
        node=None,
        gpus=[],
        pid=None,
        progress=None,
        reason=f"moved to {to} by {by}: attempt {job.attempt} on {job.node} is stopped first",
    )
    data |= {"attempt": job.attempt, "reason": f"moved to {to} by {by}"}
    return Outcome(new, [NewEvent("job_moved", job.id, job.node, data)], reap)
