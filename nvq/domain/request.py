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

from typing import Any

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


def _own(value: Any) -> Any:
    """A list or dict of the request copied, so the job and the spec share none."""
    return value.copy() if isinstance(value, list | dict) else value


def job_of(spec: JobSpec, **fields: Any) -> Job:
    """A job asking for `spec`; `fields` are the rest (id, state, ...), and win over
    the request's where both give one."""
    request = {held: _own(getattr(spec, asked)) for asked, held in REQUEST_FIELDS.items()}
    return Job(**(request | fields))


def spec_of(job: Job) -> JobSpec:
    """The submission `job` stands for now (its fields as edits left them)."""
    return JobSpec(**{asked: _own(getattr(job, held)) for asked, held in REQUEST_FIELDS.items()})
