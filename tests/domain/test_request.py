"""A job's request is one value inside its record (`JobRecord.spec`), and the flat
`Job` documents show has each field of the two once (nvq.domain.request)."""

from __future__ import annotations

import msgspec
import pytest

from nvq.domain import job_edit, request, transitions
from nvq.domain.transitions import TransitionError
from nvq.model import Job, JobRecord, JobSpec, JobState

# A value unlike the default for every JobSpec field that a job keeps.
EVERY_FIELD = JobSpec(
    command="python train.py",
    name="train",
    gpus=2,
    vram_mb=20480,
    node="box",
    priority=5,
    timeout=3600.0,
    env={"A": "1"},
    workdir="/w",
    tags=["x"],
    note="why",
    submitter="ci",
    after=[3],
    after_any=[4],
    retries=2,
    cuda="13.0",
    memory_mb=1024,
    lane="box:0",
    email_on_success=True,
    email_on_failure=False,
    max_runtime=60.0,
    no_reassign=True,
    cwd="/home/me",
    env_captured={"PATH": "/bin"},
    manifest_id="ab" * 32,
    subdir="sub",
    in_place=True,
    setup="make",
    setup_files=["req.txt"],
    retries_on="oom",
    interactive=True,
    begin_at=1.0e9,
    notify_on=["end"],
    image="alpine:3",
    image_manifest="cd" * 32,
    image_id="sha256:" + "ef" * 32,
    signal="USR1@300",
    preemptible=True,
    reservation="nightly",
    quiet=True,
    kill_on_invalid_dep=True,
)


def test_job_is_the_record_flat_every_field_once_of_its_type_and_default() -> None:
    spec_fields = {f.name: f for f in msgspec.structs.fields(JobSpec)}
    own_fields = {f.name: f for f in msgspec.structs.fields(JobRecord) if f.name != "spec"}
    job_fields = {f.name: f for f in msgspec.structs.fields(Job)}
    assert set(request.REQUEST_FIELDS) == set(spec_fields) - request.NOT_KEPT
    shown = set(request.REQUEST_FIELDS.values())
    assert shown.isdisjoint(own_fields)  # each field has one home
    assert set(job_fields) == shown | set(own_fields)
    for asked, held in request.REQUEST_FIELDS.items():
        s, j = spec_fields[asked], job_fields[held]
        assert j.type == s.type, (asked, held)
        if j.required:  # the queue always fills it in (a name, the submitter)
            continue
        assert (j.default, j.default_factory) == (s.default, s.default_factory), (asked, held)
    for name, o in own_fields.items():
        j = job_fields[name]
        assert (j.type, j.required, j.default, j.default_factory) == (
            o.type, o.required, o.default, o.default_factory
        ), name
    required = sorted(f for f, h in request.REQUEST_FIELDS.items() if job_fields[h].required)
    assert required == ["command", "name", "submitter"]


def test_the_example_sets_every_field_a_job_keeps() -> None:
    default = JobSpec(command="")
    same = [f for f in request.REQUEST_FIELDS if getattr(EVERY_FIELD, f) == getattr(default, f)]
    assert same == []


def test_a_record_shows_flat_and_comes_back_whole() -> None:
    record = JobRecord(
        id=7, state=JobState.RUNNING, user="me", created_at=1.0, spec=EVERY_FIELD,
        node="n1", gpus=[0, 1], signal=15, lane_pos=2.0, phase="setup",
    )
    job = request.view_of(record)
    assert (job.gpus_requested, job.node_request, job.checkpoint_signal) == (2, "box", "USR1@300")
    assert (job.gpus, job.node, job.signal) == ([0, 1], "n1", 15)  # the attempt's
    assert (job.lane, job.lane_pos, job.phase, job.name) == ("box:0", 2.0, "setup", "train")
    assert request.record_of(job) == record
    assert request.fields_of(record) == msgspec.structs.asdict(job)
    assert list(request.fields_of(record)) == list(Job.__struct_fields__)  # documents' order


def test_changes_named_as_documents_name_them_land_where_each_field_lives() -> None:
    record = JobRecord(id=7, state=JobState.PENDING, user="me", created_at=1.0, spec=EVERY_FIELD)
    moved = request.replaced(record, {"node_request": None, "lane": "n2:1", "lane_pos": 4.0})
    assert (moved.spec.node, moved.spec.lane, moved.lane_pos) == (None, "n2:1", 4.0)
    assert record.spec.node == "box"  # the spec is a value: the old record keeps its own
    assert request.shown(moved, "node_request") is None and request.shown(moved, "lane_pos") == 4.0
    assert request.asking(record, priority=9).spec.priority == 9


def test_a_new_job_takes_the_request_and_fills_what_the_queue_decides() -> None:
    spec = msgspec.structs.replace(
        EVERY_FIELD, name="", submitter="", after=[9, 3, 9], array="0-3"
    )
    job = transitions.new_job(spec, user="alice", now=5.0)
    assert (job.id, job.state, job.user, job.created_at) == (0, JobState.PENDING, "alice", 5.0)
    assert (job.spec.name, job.spec.submitter, job.spec.after) == ("python", "alice", [3, 9])
    assert job.spec.lane is None  # resolved against the nodes by the daemon
    assert job.array_id is None  # a submit expands the array into members
    kept = msgspec.structs.replace(spec, after=[3, 9], lane=None, array=None)
    assert job.spec == msgspec.structs.replace(kept, name="python", submitter="alice")


def test_job_edit_checks_the_whole_request_a_terminal_session_included() -> None:
    # A `job shell` session has no command (the login shell): valid only as interactive,
    # which the edit's spec once left out, refusing every edit of a waiting session.
    shell = transitions.new_job(JobSpec(command="", interactive=True), user="me", now=0.0)
    assert job_edit.checked_changes(shell, {"priority": 3}) == {"priority": 3}
    with pytest.raises(TransitionError, match="--signal: a terminal session is not sent one"):
        job_edit.checked_changes(shell, {"signal": "USR1@60"})
    assert job_edit.checked_changes(shell, {"gpus": 2}) == {"gpus_requested": 2}
