"""Refusals at submit that need the daemon's view: a job no node could ever run, and
an e-mail asked for with no way to send one. Both are the user's to fix, so both are
`BadRequest` (exit 2) rather than a job that waits, or fails, later."""

from __future__ import annotations

import anyio

from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.pending_view import to_pending
from nvq.daemon.placement.slots import node_slots
from nvq.domain import lanes
from nvq.domain.placement import place
from nvq.model import JobRecord, JobSpec


def check_mail(state: State, spec: JobSpec) -> None:
    if state.config.notify.email is not None:
        return
    for flag, wanted in (
        ("--email-on-success", spec.email_on_success),
        ("--email-on-failure", spec.email_on_failure),
    ):
        if wanted:
            raise BadRequest(f"{flag}: no [notify.email] in config.toml, so no mail can be sent")


REPORT_WAIT = 3.0  # seconds a submit waits for connecting nodes to report their cards


def _pinned_to(spec: JobSpec) -> str:
    """The prefix of the nodes a job may go to: its `--node`, its lane's node, or all."""
    return lanes.parse_lane(spec.lane)[0] if spec.lane else spec.node or ""


def _unreported(state: State, prefix: str) -> list[NodeRuntime]:
    return [
        n
        for n in state.nodes.values()
        if n.hello is None and not n.ignored and n.name.startswith(prefix)
    ]


def _first_connect(node: NodeRuntime) -> bool:
    """Its link is making its first attempt (none failed yet): a report may be near."""
    return node.state == "connecting" and node.link_scope is not None and node.error is None


async def await_reports(state: State, spec: JobSpec) -> None:
    """Give nodes still connecting (a daemon just started, often by this very submit)
    a moment to report, so that the check of `check_runnable` can run; a node whose
    connection failed already, or that is down, is not waited for."""
    prefix = _pinned_to(spec)
    with anyio.move_on_after(REPORT_WAIT):
        while any(_first_connect(n) for n in _unreported(state, prefix)):
            changed = state.changed  # set once a node is reconciled, among others
            with anyio.move_on_after(0.1):
                await changed.wait()


def check_runnable(
    state: State, memory: Memory, inputs: PlacementInputs, job: JobRecord
) -> list[str]:
    """Refuse `job` when no node could ever hold it, even idle. Only once every node it
    could go to has reported its cards: one that has not might hold anything, and the
    job is then accepted (placement marks it unschedulable later if need be). Returns
    the nodes that have not reported (the check did not run), for the reply to say."""
    prefix = _pinned_to(job.spec)
    unreported = [n.name for n in _unreported(state, prefix)]
    if unreported:
        return unreported
    slots = node_slots(state, inputs, memory.slot_cache)
    pending = to_pending(job, **inputs.pending_fields(job))
    queue = state.config.queue
    result = place(
        slots,
        [pending],
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
    )
    for bad in result.unschedulable:
        raise BadRequest(f"no node can ever run this job: {bad.reason}")
    return []
