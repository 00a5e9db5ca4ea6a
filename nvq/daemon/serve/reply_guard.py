"""A check, for the tests, that no `JobRecord` leaves the daemon. The daemon holds a job
as a record (its request nested as `spec`); every reply shows it as the flat `Job`
(`nvq.domain.request.view_of`). A typed reply field that names `Job` makes the client
refuse a record, but a field typed `Any` (a lane's jobs, a status's) would carry one
out nested, past `hide_secrets`, which knows the flat shape. Walking every answer costs
a long one real time, so only a daemon started with NVQ_CHECK_REPLIES=1 (the test
harness's) does it."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from nvq.model import JobRecord

CHECKING = os.environ.get("NVQ_CHECK_REPLIES") == "1"


def holds_record(value: Any) -> bool:
    """Whether `value` is or contains a JobRecord, at any depth."""
    if isinstance(value, JobRecord):
        return True
    if isinstance(value, msgspec.Struct):
        return any(holds_record(getattr(value, f)) for f in value.__struct_fields__)
    if isinstance(value, dict):
        return any(holds_record(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_record(v) for v in value)
    return False
