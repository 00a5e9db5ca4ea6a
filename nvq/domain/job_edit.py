"""Changing what a job asks for after it was submitted (`nvq job edit ID --vram ...`).
Pure. A waiting job can change anything submit set, checked by the one validator of
a submission; a running one only what does not change where or what it runs."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.domain.transitions import TransitionError
from nvq.domain.validate import SpecError, flag_of, validate_spec
from nvq.model import Job, JobSpec, JobState, NewEvent, Outcome

# JobSpec field → the Job field that holds it, for every field `job edit` may change.
EDITABLE_FIELDS = {
    "command": "command",
    "name": "name",
    "note": "note",
    "tags": "tags",
    "priority": "priority",
    "timeout": "timeout",
    "node": "node_request",
    "gpus": "gpus_requested",
    "vram_mb": "vram_mb",
    "memory_mb": "memory_mb",
    "cuda": "cuda",
    "env": "env",
    "lane": "lane",
    "image": "image",
    "signal": "checkpoint_signal",
    "preemptible": "preemptible",
    "reservation": "reservation",
    "notify_on": "notify_on",
}
# A running job keeps its node, cards, process and the deadline its runner enforces;
# what its webhooks hear of may change while it runs (that is when it matters).
WHILE_RUNNING = frozenset({"name", "note", "tags", "priority", "notify_on"})
WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def spec_of(job: Job) -> JobSpec:
    """The submission `job` stands for now (its fields as edits left them)."""
    return JobSpec(
        command=job.command,
        name=job.name,
        gpus=job.gpus_requested,
        vram_mb=job.vram_mb,
        node=job.node_request,
        priority=job.priority,
        timeout=job.timeout,
        env=dict(job.env),
        workdir=job.workdir,
        tags=list(job.tags),
        note=job.note,
        submitter=job.submitter,
        after=list(job.after),
        after_any=list(job.after_any),
        retries=job.retries,
        cuda=job.cuda,
        memory_mb=job.memory_mb,
        lane=job.lane,
        email_on_success=job.email_on_success,
        email_on_failure=job.email_on_failure,
        max_runtime=job.max_runtime,
        no_reassign=job.no_reassign,
        retries_on=job.retries_on,
        notify_on=None if job.notify_on is None else list(job.notify_on),
        image=job.image,
        image_manifest=job.image_manifest,
        image_id=job.image_id,
        signal=job.checkpoint_signal,
        preemptible=job.preemptible,
        reservation=job.reservation,
    )


def checked_changes(job: Job, changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` (JobSpec field → new value) as Job fields, after the same checks as a
    submit; raises TransitionError naming the flag at fault."""
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise TransitionError(f"job edit cannot change {', '.join(unknown)}")
    if not changes:
        raise TransitionError("nothing to change")
    if job.state is JobState.RUNNING:
        fixed = [flag_of(f) or "--command" for f in changes if f not in WHILE_RUNNING]
        if fixed:
            raise TransitionError(
                f"job {job.id} is running: only --priority --name --note --tag --notify-on "
                f"can change now, not {' '.join(fixed)}; `nvq job requeue {job.id}` after it ends, "
                f"or cancel it and submit it again"
            )
    elif job.state not in WAITING:
        raise TransitionError(f"job {job.id} cannot be edited: it is {job.state}")
    try:
        merged = msgspec.structs.asdict(spec_of(job)) | changes
        spec = validate_spec(msgspec.convert(merged, JobSpec))
    except SpecError as exc:
        raise TransitionError(str(exc)) from None
    except msgspec.ValidationError as exc:
        raise TransitionError(f"invalid change: {exc}") from None
    return {EDITABLE_FIELDS[f]: getattr(spec, f) for f in changes}


def edit_fields(job: Job, fields: dict[str, Any], *, by: str) -> Outcome:
    """Apply Job `fields` (from `checked_changes`, lane already resolved) with an
    event that has each field's value before and after."""
    changed = {k: v for k, v in fields.items() if getattr(job, k) != v}
    if not changed:
        return Outcome()
    before = {k: getattr(job, k) for k in changed}
    new = msgspec.structs.replace(job, **changed)
    data = {"before": before, "after": changed, "by": by}
    return Outcome(new, [NewEvent("job_changed", job.id, None, data)])
