"""A job's request inside its record, and the record shown flat. Pure.

The queue holds a job as a `JobRecord`: its request is one frozen `JobSpec`
(`record.spec`), the queue's own fields (id, state, attempt, cards held, times, ...)
beside it. Editing what a job asks for is `msgspec.structs.replace(record.spec, ...)`.

Documents, replies and the `jobs` row show a job flat, as `Job`: every field of the
record but `spec`, and every field of the spec but `array`, interleaved in `Job`'s
order, three of them renamed (`REQUEST_RENAMES`). `view_of` and `record_of` cross by
the table below, built from the structs' fields, so a field added to JobSpec or to
JobRecord needs only its place in `Job` (a test checks that the three agree).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec

from nvq.model import Job, JobRecord, JobSpec

# Where the flat name differs: `Job` gives these names to the record's own (the
# current attempt's cards `gpus`, its `node`, the `signal` that ended it).
REQUEST_RENAMES = {"gpus": "gpus_requested", "node": "node_request", "signal": "checkpoint_signal"}
# Not kept as asked: a submit expands it into its members (array_id, array_index,
# array_limit).
NOT_KEPT = frozenset({"array"})
# JobSpec field → the Job field that shows it.
REQUEST_FIELDS: dict[str, str] = {
    name: REQUEST_RENAMES.get(name, name)
    for name in JobSpec.__struct_fields__
    if name not in NOT_KEPT
}
# The record's own fields (all but `spec`), each shown under its own name.
OWN_FIELDS: tuple[str, ...] = tuple(n for n in JobRecord.__struct_fields__ if n != "spec")

_ASKED_BY_SHOWN = {shown: asked for asked, shown in REQUEST_FIELDS.items()}
# `Job`'s fields in order, and where each is in a record ("spec.gpus" for
# gpus_requested): one getter reads a whole document's values out of a record.
JOB_FIELDS: tuple[str, ...] = Job.__struct_fields__
_FLAT = attrgetter(
    *(f"spec.{_ASKED_BY_SHOWN[n]}" if n in _ASKED_BY_SHOWN else n for n in JOB_FIELDS)
)


def asking(record: JobRecord, **changes: Any) -> JobRecord:
    """`record` asking for `changes` (JobSpec fields) instead."""
    return msgspec.structs.replace(record, spec=msgspec.structs.replace(record.spec, **changes))


def shown(record: JobRecord, name: str) -> Any:
    """The value of `record`'s field `name` as `Job` names it (an event's `before`)."""
    asked = _ASKED_BY_SHOWN.get(name)
    return getattr(record.spec, asked) if asked else getattr(record, name)


def replaced(record: JobRecord, changes: dict[str, Any]) -> JobRecord:
    """`record` with `changes`, named as `Job` names them (a `job_changed` or
    `job_moved` event's `after`), each set in the spec or the record that holds it."""
    asked = {_ASKED_BY_SHOWN[k]: v for k, v in changes.items() if k in _ASKED_BY_SHOWN}
    own = {k: v for k, v in changes.items() if k not in _ASKED_BY_SHOWN}
    if asked:
        own["spec"] = msgspec.structs.replace(record.spec, **asked)
    return msgspec.structs.replace(record, **own)


def flat_values(record: JobRecord) -> tuple[Any, ...]:
    """The values of `record`'s `Job`, in `JOB_FIELDS` order (a `jobs` row)."""
    values: tuple[Any, ...] = _FLAT(record)
    return values


def fields_of(record: JobRecord) -> dict[str, Any]:
    """`record` flat, as a dict in `Job`'s order (a reply that adds its own fields)."""
    return dict(zip(JOB_FIELDS, _FLAT(record), strict=True))


def view_of(record: JobRecord) -> Job:
    """`record` as documents and rows show it (shares its lists and maps)."""
    return Job(**fields_of(record))


def record_from(fields: dict[str, Any]) -> JobRecord:
    """The record of a flat job given as a dict of its `Job` fields (a stored row)."""
    spec = JobSpec(**{asked: fields[shown] for asked, shown in REQUEST_FIELDS.items()})
    return JobRecord(spec=spec, **{name: fields[name] for name in OWN_FIELDS})


def record_of(view: Job) -> JobRecord:
    """The record a flat `view` shows (a recovered job, a test's)."""
    return record_from(msgspec.structs.asdict(view))
