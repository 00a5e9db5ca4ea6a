"""Why a job that is not running is where it is: the one-line reason (`job ls`, `job
why`) from the last pass's facts, and the sentence `job show` prints."""

from __future__ import annotations

import time

from nvq.daemon.core.state import State
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.pending_view import in_place_nodes
from nvq.daemon.placement.placing import dependency_states, lane_statuses, pending_of
from nvq.daemon.placement.waits import reason_of
from nvq.domain import deps
from nvq.domain.waiting import Waiting
from nvq.model import JobRecord, JobState


def waiting_of(
    state: State, memory: Memory, inputs: PlacementInputs, job: JobRecord
) -> Waiting | None:
    """Why a pending, held or paused job is not running (None for other states)."""
    pending = pending_of(state, memory, inputs, job) if job.state is JobState.PENDING else None
    return reason_of(memory.pass_facts, job, pending, state.jobs)


async def explain(state: State, memory: Memory, job: JobRecord) -> str | None:
    """Why a job that is not running is where it is, in words (for `job show`)."""
    if job.state is JobState.HELD:
        states = await dependency_states(state, [job])
        dead = deps.dead_prerequisites(job, states)
        parts = [f"prerequisite {d} ended {states[d]}" for d in dead if d in states]
        what = "; ".join(parts) or (job.reason or "held")
        ids = ",".join(map(str, dead)) or "N"
        return (
            f"held: {what}. `nvq job release {job.id}` runs it without it; "
            f"`nvq job edit {job.id} --drop-after {ids} --add-after M` re-attaches it; "
            f"`nvq job cancel {job.id}` ends it"
        )
    if job.state is JobState.PAUSED:
        return f"{job.reason or 'paused'}; `nvq job resume {job.id}` puts it back in line"
    if job.state is not JobState.PENDING:
        return None
    status = deps.dependency_status(job, await dependency_states(state, [job]))
    if isinstance(status, deps.Waiting):
        kind = "complete" if status.on in job.spec.after else "end"
        return f"waiting for job {status.on} to {kind}"
    if job.spec.lane is not None:
        st = next((s for s in lane_statuses(state, {}) if s.lane == job.spec.lane), None)
        if st is not None:
            pos = st.queue.index(job.id) + 1 if job.id in st.queue else None
            where = f"lane {job.spec.lane}, position {pos} of {len(st.queue)}"
            if st.paused:
                return f"{where}; the lane is paused"
            if st.running is not None:
                return f"{where}; job {st.running} runs on the lane now"
            if st.blocked or job.spec.lane in memory.lane_blocked:
                return f"{where}; blocked: {st.blocked or memory.lane_blocked[job.spec.lane]}"
            return where
    if job.array_id is not None and job.array_limit is not None:
        running = sum(
            1
            for j in state.jobs.values()
            if j.array_id == job.array_id and j.state is JobState.RUNNING
        )
        if running >= job.array_limit:
            return f"array {job.array_id}: {running} of at most {job.array_limit} members running"
    reservation = memory.reservation
    if reservation is not None and reservation.job_id == job.id:
        when = "when its running jobs end (they have no --timeout)"
        if reservation.ready_at is not None:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(reservation.ready_at))
            when = f"expected free by {stamp}"
        return (
            f"waiting on a reservation of node {reservation.node} ({when}): it has waited "
            "longer than starvation_after, so smaller jobs may use that node only if "
            "their --timeout ends before then"
        )
    if job.spec.in_place:
        seen_by = ", ".join(in_place_nodes(state.config, job.spec.cwd)) or "no node"
        return f"waiting for a node with room that sees {job.spec.cwd} (in place): {seen_by}"
    return "waiting for a node with room"
