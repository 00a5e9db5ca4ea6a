"""Refusals at submit that need the daemon's view: a job no node could ever run, and
an e-mail asked for with no way to send one. Both are the user's to fix, so both are
`BadRequest` (exit 2) rather than a job that waits, or fails, later."""

from __future__ import annotations

from nvq.daemon.errors import BadRequest
from nvq.daemon.placing import to_pending
from nvq.daemon.reassign import Machines
from nvq.daemon.slots import node_slots
from nvq.daemon.state import State
from nvq.domain.placement import place
from nvq.model import Job, JobSpec


def check_mail(state: State, spec: JobSpec) -> None:
    if state.config.notify.email is not None:
        return
    for flag, wanted in (
        ("--email-on-success", spec.email_on_success),
        ("--email-on-failure", spec.email_on_failure),
    ):
        if wanted:
            raise BadRequest(f"{flag}: no [notify.email] in config.toml, so no mail can be sent")


def check_runnable(state: State, machines: Machines, job: Job) -> None:
    """Refuse `job` when no node could ever hold it, even idle. Only once every node it
    could go to has reported its cards: one that has not might hold anything, and the
    job is then accepted (placement marks it unschedulable later if need be)."""
    prefix = job.node_request or ""
    if any(
        n.hello is None and not n.ignored and n.name.startswith(prefix)
        for n in state.nodes.values()
    ):
        return
    slots = node_slots(state, machines)
    pending = to_pending(job, **machines.pending_fields(job))
    queue = state.config.queue
    result = place(
        slots,
        [pending],
        headroom_mb=queue.headroom_mb,
        max_cpu_jobs=queue.max_cpu_jobs_per_node,
    )
    for bad in result.unschedulable:
        raise BadRequest(f"no node can ever run this job: {bad.reason}")
