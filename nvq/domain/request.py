"""What a job asks for, as one value. Pure.

A stored `Job` carries every `JobSpec` field but `array`, flat, under the names of
`REQUEST_FIELDS`; `job_of` and `spec_of` cross between the two by that table, so no
field is copied by hand and a field added to JobSpec reaches the job (a test checks
that Job has each one, with the same type and default).

Flat rather than `Job.spec: JobSpec` because a Job is also the `--json` document,
the reply the CLI decodes and the `jobs` row: the documents' key order interleaves the
request with the queue's own fields (id, name, state, command, user, ...), which
neither a nested nor an inherited JobSpec can keep.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, get_args, get_origin

import msgspec

from nvq.model import Job, JobSpec

# Where a Job's name differs: a Job gives these names to its current attempt, the
# cards it holds (`gpus`), the node it runs on (`node`), the signal that ended it.
REQUEST_RENAMES = {"gpus": "gpus_requested", "node": "node_request", "signal": "checkpoint_signal"}
# Not kept as asked: a submit expands it into its members (array_id, array_index,
# array_limit).
NOT_KEPT = frozenset({"array"})
# JobSpec field → the Job field that holds it.
REQUEST_FIELDS: dict[str, str] = {
    name: REQUEST_RENAMES.get(name, name)
    for name in JobSpec.__struct_fields__
    if name not in NOT_KEPT
}


def _container(kind: Any) -> bool:
    """A list or a dict, or a union that may be one (`dict[str, str] | None`)."""
    return get_origin(kind) in (list, dict) or any(_container(k) for k in get_args(kind))


# The request's lists and maps, copied across so that a job and its spec share none.
_LISTS_AND_MAPS = [
    f.name for f in msgspec.structs.fields(JobSpec) if f.name in REQUEST_FIELDS and _container(f.type)
]


class _Way:
    """One direction across: read these fields, write them under those names."""

    def __init__(self, names: dict[str, str], copied: list[str]) -> None:
        self.read = attrgetter(*names)
        self.write = tuple(names.values())
        self.copied = copied

    def __call__(self, struct: Any) -> dict[str, Any]:
        out = dict(zip(self.write, self.read(struct), strict=True))
        for name in self.copied:
            if out[name] is not None:
                out[name] = out[name].copy()
        return out


_TO_JOB = _Way(REQUEST_FIELDS, [REQUEST_FIELDS[name] for name in _LISTS_AND_MAPS])
_TO_SPEC = _Way({held: asked for asked, held in REQUEST_FIELDS.items()}, _LISTS_AND_MAPS)


def job_of(spec: JobSpec, **fields: Any) -> Job:
    """A job asking for `spec`; `fields` are the rest (id, state, ...), and win over
    the request's where both give one."""
    return Job(**(_TO_JOB(spec) | fields))


def spec_of(job: Job) -> JobSpec:
    """The submission `job` stands for now (its fields as edits left them)."""
    return JobSpec(**_TO_SPEC(job))
