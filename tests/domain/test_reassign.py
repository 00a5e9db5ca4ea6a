"""Pure parts of issue 5: reassignment and preemption decisions, busy placement, the
orphan accounting on a card, attempts from events, and owner
activity read from a synthetic utmp file."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from nvq.daemon.placement.views import gpu_view
from nvq.domain import attempts, reassign
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from nvq.domain.request import record_of
from nvq.model import Event, Job, JobRecord, JobState
from nvq_runner.owner import activity, read_sessions, utmp_record
from nvq_runner.protocol import GpuInfo, GpuProcess, GpuSample

GiB = 1024


def _job(**kw: Any) -> JobRecord:
    base: dict[str, Any] = dict(
        id=7,
        name="t",
        state=JobState.RUNNING,
        command="true",
        user="bob",
        submitter="bob",
        created_at=1.0,
        attempt=1,
        node="n1",
        gpus=[0],
        started_at=10.0,
    )
    base.update(kw)
    return record_of(Job(**base))


# -- reassignment and preemption ------------------------------------------------------------


def test_reassign_returns_the_job_to_pending_with_a_reap_and_no_retry_spent() -> None:
    out = reassign.reassign(_job(retries=1), "n1", "node n1 down", now=50.0)
    new, evs, reap = out.job, out.events, out.reap
    assert new is not None and new.state is JobState.PENDING
    assert new.node is None and new.gpus == [] and new.attempt == 1 and new.retried == 0
    assert [e.kind for e in evs] == ["job_reassigned"]
    assert evs[0].data == {"attempt": 1, "reason": "node n1 down"}
    assert reap is not None and (reap.node, reap.reason) == ("n1", "reassigned")


def test_no_reassign_marks_the_job_lost_and_still_owes_a_kill() -> None:
    out = reassign.reassign(_job(no_reassign=True), "n1", "down", now=50.0)
    new, evs, reap = out.job, out.events, out.reap
    assert new is not None and new.state is JobState.LOST and new.ended_at == 50.0
    assert [e.kind for e in evs] == ["job_lost"]
    assert reap is not None and reap.reason in reassign.FENCING_REASONS


def test_reassign_ignores_jobs_elsewhere_or_not_running() -> None:
    assert reassign.reassign(_job(node="n2"), "n1", "down", 1.0).job is None
    assert reassign.reassign(_job(state=JobState.PENDING), "n1", "down", 1.0).job is None


def test_preempt_is_a_stop_that_waits_before_the_job_runs_again() -> None:
    out = reassign.preempt(_job(), "owner is back")
    new, evs, reap = out.job, out.events, out.reap
    assert new is not None and new.state is JobState.PENDING
    assert evs[0].kind == "job_preempted"
    assert reap is not None and reap.reason in reassign.STOPPING_REASONS


def test_max_runtime_binds_only_on_a_borrowed_node() -> None:
    job = _job(max_runtime=60.0, user="bob")
    assert reassign.runtime_exceeded(job, "alice", now=100.0)
    assert not reassign.runtime_exceeded(job, "alice", now=50.0)
    assert not reassign.runtime_exceeded(job, "bob", now=100.0)  # bob's own node
    assert not reassign.runtime_exceeded(job, None, now=100.0)  # nobody's node
    assert not reassign.runtime_exceeded(_job(), "alice", now=1e9)


def test_busy_modes_and_victims() -> None:
    assert reassign.effective_busy("on", False) and not reassign.effective_busy("off", True)
    assert reassign.effective_busy("auto", True) and not reassign.effective_busy("auto", None)
    jobs = [_job(id=1, user="alice"), _job(id=2, user="bob")]
    assert [j.id for j in reassign.busy_victims(jobs, "alice")] == [2]


# -- placement on busy nodes ----------------------------------------------------------------


def _node(name: str, busy: bool = False, owner: str | None = None, running: int = 0) -> NodeSlot:
    cards = [GpuSlot(0, 24 * GiB, 0, 0)]
    return NodeSlot(name, True, cards, 0, running, busy=busy, owner=owner)


def _pending(id: int, user: str, forbid: bool = False, node: str | None = None) -> PendingJob:
    return PendingJob(id, 0, float(id), 1, 20 * GiB, node=node, user=user, forbid_busy=forbid)


def _placed(nodes: list[NodeSlot], jobs: list[PendingJob]) -> dict[int, str]:
    result = place(nodes, jobs, headroom_mb=512, max_cpu_jobs=4)
    return {p.job_id: p.node for p in result.placements}


def test_a_busy_node_takes_only_its_owners_jobs_and_only_when_no_idle_node_fits() -> None:
    nodes = [_node("a", busy=True, owner="alice"), _node("b", running=5)]
    # An idle node wins even when far more loaded.
    assert _placed(nodes, [_pending(1, "alice")]) == {1: "b"}
    assert _placed(nodes, [_pending(1, "alice"), _pending(2, "alice")]) == {1: "b", 2: "a"}
    assert _placed(nodes, [_pending(1, "bob"), _pending(2, "bob")]) == {1: "b"}
    forbidden = [_pending(1, "alice", forbid=True, node="a")]
    assert _placed(nodes, forbidden) == {}
    assert _placed([_node("a", owner="alice")], [_pending(1, "bob")]) == {1: "a"}  # idle


# -- a reassigned attempt's orphan on a card ------------------------------------------------


def test_an_orphan_of_a_reassigned_attempt_counts_as_external() -> None:
    info = GpuInfo(index=0, name="x", uuid="u", total_mb=24 * GiB)
    procs = [
        GpuProcess(pid=1, user="root", used_mb=10 * GiB, job_id=7),  # charged job
        GpuProcess(pid=2, user="root", used_mb=6 * GiB, job_id=99),  # orphan
    ]
    sample = GpuSample(
        index=0, total_mb=24 * GiB, used_mb=16 * GiB, util_percent=0, processes=procs
    )
    view = gpu_view(info, sample, [_job(vram_mb=8 * GiB)], headroom_mb=0, schedulable=True)
    assert view.external_mem_mb == 6 * GiB and view.external_procs == 1
    assert view.free_mb == 24 * GiB - 6 * GiB - 10 * GiB


# -- attempts from events ---------------------------------------------------------------------


def test_attempts_are_derived_from_the_jobs_events() -> None:
    def ev(i: int, kind: str, node: str | None = None, **data: Any) -> Event:
        return Event(id=i, time=float(i), kind=kind, job_id=7, node=node, data=data)

    events = [
        ev(1, "job_submitted"),
        ev(2, "job_dispatched", "n1", attempt=1, gpus=[0]),
        ev(3, "job_started", "n1", attempt=1, pid=5),
        ev(4, "job_reassigned", "n1", attempt=1, reason="node n1 down"),
        ev(5, "job_dispatched", "n2", attempt=2, gpus=[1]),
        ev(6, "job_started", "n2", attempt=2, pid=6),
        ev(7, "job_completed", "n2", attempt=2, exit_code=0),
        ev(8, "job_cancelled", None, by="x"),  # nothing ran: no attempt changes
    ]
    got = attempts.derive(events)
    assert [(a.attempt, a.node, a.gpus, a.outcome) for a in got] == [
        (1, "n1", [0], "reassigned"),
        (2, "n2", [1], "completed"),
    ]
    assert got[0].reason == "node n1 down" and (got[1].started_at, got[1].ended_at) == (6.0, 7.0)


# -- owner activity from utmp -------------------------------------------------------------


def test_owner_activity_from_a_synthetic_utmp(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "pts").mkdir(parents=True)
    now = time.time()
    for tty, idle in (("pts/1", 30), ("pts/2", 3600), ("tty3", 5)):
        (dev / tty).touch()
        os.utime(dev / tty, (now - idle, now - idle))
    utmp = tmp_path / "utmp"
    utmp.write_bytes(
        utmp_record("alice", "pts/1", 100)
        + utmp_record("alice", "pts/2", 101)
        + utmp_record("bob", "tty3", 102)
        + utmp_record("alice", "tty3", 103, ut_type=8)  # DEAD_PROCESS: a logout
        + utmp_record("alice", ":0", 104)  # no terminal device: idle unknown
    )
    sessions = list(read_sessions(utmp.read_bytes()))
    assert [(s.user, s.line) for s in sessions] == [
        ("alice", "pts/1"),
        ("alice", "pts/2"),
        ("bob", "tty3"),
        ("alice", ":0"),
    ]
    got = activity("alice", 600, utmp=utmp, dev=dev, now=now, alive=False)
    assert got.busy and got.sessions == 1 and 29 <= (got.idle or 0) <= 31
    assert not activity("alice", 10, utmp=utmp, dev=dev, now=now, alive=False).busy
    assert activity("bob", 600, utmp=utmp, dev=dev, now=now, alive=False).busy
    assert not activity("carol", 600, utmp=utmp, dev=dev, now=now, alive=False).busy
    missing = activity("alice", 600, utmp=tmp_path / "nope", dev=dev, now=now)
    assert not missing.busy
