"""Changing what a job asks for after it was submitted (`nvq job edit ID --vram ...`).
Pure. A waiting job can change anything submit set, checked by the one validator of
a submission; a running one only what does not change where or what it runs."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.domain import request
from nvq.domain.submit_options import EDITABLE_FIELDS, WHILE_RUNNING
from nvq.domain.transitions import TransitionError
from nvq.domain.validate import SpecError, flag_of, validate_spec
from nvq.model import JobRecord, JobSpec, JobState, NewEvent, Outcome

WAITING = frozenset({JobState.PENDING, JobState.HELD, JobState.PAUSED})


def checked_changes(job: JobRecord, changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` (JobSpec field → new value) named as `Job` names them (a
    `job_changed` event's), after the same checks as a submit; raises TransitionError
    naming the flag at fault."""
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
        merged = msgspec.structs.asdict(job.spec) | changes
        spec = validate_spec(msgspec.convert(merged, JobSpec))
    except SpecError as exc:
        raise TransitionError(str(exc)) from None
    except msgspec.ValidationError as exc:
        raise TransitionError(f"invalid change: {exc}") from None
    return {request.REQUEST_FIELDS[f]: getattr(spec, f) for f in changes}


def edit_fields(job: JobRecord, fields: dict[str, Any], *, by: str) -> Outcome:
    """Apply `fields` (from `checked_changes`, lane already resolved, named as `Job`
    names them) with an event that has each field's value before and after."""
    changed = {k: v for k, v in fields.items() if request.shown(job, k) != v}
    if not changed:
        return Outcome()
    before = {k: request.shown(job, k) for k in changed}
    new = request.replaced(job, changed)
    data = {"before": before, "after": changed, "by": by}
    return Outcome(new, [NewEvent("job_changed", job.id, None, data)])
