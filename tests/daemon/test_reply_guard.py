"""The tests' daemon refuses to answer with a JobRecord (nvq.daemon.serve.reply_guard): one
found at any depth, in a struct, a dict or a list, and none in the flat Job."""

from __future__ import annotations

from nvq.daemon.serve.reply_guard import holds_record
from nvq.domain.request import view_of
from nvq.model import JobRecord, JobSpec, JobState


def _record() -> JobRecord:
    return JobRecord(id=1, state=JobState.PENDING, user="u", created_at=0.0,
                     spec=JobSpec(command="true", name="x", submitter="u"))


def test_a_record_is_found_wherever_it_hides() -> None:
    record = _record()
    assert holds_record(record)
    assert holds_record({"jobs": [1, {"running_job": record}]})
    assert holds_record((0, [record]))


def test_the_flat_job_and_plain_data_pass() -> None:
    job = view_of(_record())
    assert not holds_record(job)
    assert not holds_record({"jobs": [job], "more": False, "n": 3, "s": "spec"})
