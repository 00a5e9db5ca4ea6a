"""The decide step of a runner's journaled events, in memory (`decide_batch`): what a
batch commits and what it owes, asserted as data, with no daemon, store or runner
(as distributed tests `handle_stimulus`). Bursts, replays, fencings, reaps, and the
events about attempts queue.db never dispatched."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from nvq.daemon.core.effects import Ended
from nvq.daemon.core.journal_batch import Batch, Fetched, decide_batch
from nvq.daemon.core.nodes import NodeRuntime
from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState, NodeSeq, Reap
from nvq_runner import protocol as p


def job(id: int, **kw: Any) -> JobRecord:
    base = Job(id=id, name="j", state=JobState.RUNNING, command="true", user="me",
               submitter="me", created_at=1.0, node="n1", attempt=1, gpus=[0])
    return record_of(msgspec.structs.replace(base, **kw))


def linked(applied: int = 0) -> NodeRuntime:
    """A node connected and reconciled, its journal applied through `applied`."""
    node = NodeRuntime(name="n1", config=None)
    node.journal_id, node.applied_seq = "j1", applied
    node.reconciled, node.send = True, lambda msg: True
    return node


def exited(seq: int, job_id: int, attempt: int = 1, code: int = 0) -> p.JobExited:
    return p.JobExited(seq=seq, job_id=job_id, attempt=attempt, exit_code=code, signal=None,
                       ended_at=50.0, reason="exit")


def started(seq: int, job_id: int, attempt: int = 1) -> p.JobStarted:
    return p.JobStarted(seq=seq, job_id=job_id, attempt=attempt, pid=100 + job_id,
                        started_at=10.0)


def test_a_burst_of_exits_is_one_commit_with_one_ack() -> None:
    node = linked(applied=4)
    jobs = {i: job(i) for i in range(1, 5)}
    evs = [exited(4 + i, i, code=i % 2) for i in range(1, 5)]
    tx, fx = decide_batch(jobs, {}, node, evs)
    assert [(j.id, j.state) for j in tx.jobs] == [
        (1, JobState.FAILED), (2, JobState.COMPLETED), (3, JobState.FAILED),
        (4, JobState.COMPLETED)]
    assert [e.kind for e in tx.events] == ["job_failed", "job_completed"] * 2
    assert tx.node_seq == NodeSeq("n1", "j1", 8)
    assert fx.acks == [(node, 8)]
    assert [(e.job.id if e.job else None, e.attempt, e.kept) for e in fx.ended] == [
        (1, 1, True), (2, 1, True), (3, 1, True), (4, 1, True)]
    assert fx.kick and fx.kills == [] and fx.starts == []
    # Every one of them could share the commit: none needed the database.
    batch = Batch(jobs, {}, {}, node)
    for ev in evs:
        assert batch.plain(ev)
        batch.decide(ev)


def test_a_start_and_its_exit_in_one_read_see_each_other() -> None:
    node = linked()
    jobs = {7: job(7)}
    batch = Batch(jobs, {}, {}, node)
    start, end = started(1, 7), exited(2, 7, code=3)
    assert batch.plain(start)
    batch.decide(start)
    assert batch.plain(end)  # decided against the job as its start left it
    batch.decide(end)
    tx, fx = batch.result()
    assert [e.kind for e in tx.events] == ["job_started", "job_failed"]
    assert tx.jobs[-1].state is JobState.FAILED and tx.jobs[-1].pid == 107
    assert tx.jobs[-1].exit_code == 3
    assert fx.acks == [(node, 2)] and fx.kick and len(fx.ended) == 1
    assert jobs[7].state is JobState.RUNNING  # memory is the commit's to change


def test_a_start_alone_owes_no_placement_pass() -> None:
    node = linked()
    tx, fx = decide_batch({7: job(7)}, {}, node, [started(1, 7)])
    assert [e.kind for e in tx.events] == ["job_started"]
    assert not fx.kick and fx.ended == [] and fx.acks == [(node, 1)]


def test_a_replayed_batch_is_only_acknowledged_again() -> None:
    node = linked(applied=6)
    jobs = {1: job(1), 2: job(2)}
    tx, fx = decide_batch(jobs, {}, node, [exited(5, 1), exited(6, 2)])
    assert tx.jobs == [] and tx.events == [] and tx.node_seq is None
    assert fx.acks == [(node, 6)]
    assert not fx.kick and fx.ended == []


def test_the_same_seq_twice_applies_once() -> None:
    node = linked(applied=2)
    jobs = {1: job(1)}
    tx, fx = decide_batch(jobs, {}, node, [exited(2, 1), exited(3, 1), exited(3, 1)])
    assert [(j.id, j.state) for j in tx.jobs] == [(1, JobState.COMPLETED)]
    assert [e.kind for e in tx.events] == ["job_completed"]
    assert tx.node_seq == NodeSeq("n1", "j1", 3)
    assert fx.acks == [(node, 3)] and len(fx.ended) == 1


def test_a_fenced_attempt_goes_back_to_the_queue_with_no_kill_and_no_sync() -> None:
    node = linked()
    fenced = p.AttemptFenced(seq=1, job_id=7, attempt=1, at=40.0, silent_for=3.2, lease=3.0)
    tx, fx = decide_batch({7: job(7)}, {}, node, [fenced])
    (back,) = tx.jobs
    assert back.state is JobState.PENDING and back.node is None
    assert [e.kind for e in tx.events] == ["attempt_fenced"]
    assert tx.add_reaps == [Reap(7, 1, "n1", "fenced")]  # placed again once its exit is in
    assert fx.kick and fx.kills == [] and fx.ended == []
    assert fx.acks == [(node, 1)]
    assert not Batch({7: job(7)}, {}, {}, node).plain(fenced)


def test_the_exit_of_an_attempt_owed_a_kill_drops_the_reap() -> None:
    node = linked()
    cancelled = job(3, state=JobState.CANCELLED)
    reaps = {(3, 1): Reap(3, 1, "n1", "cancel")}
    end = exited(1, 3)
    assert not Batch({}, reaps, {(3, 1): cancelled}, node).plain(end)
    fetched = Fetched(stored={3: cancelled}, events={3: []})
    tx, fx = decide_batch({}, reaps, node, [end], fetched, reaping={(3, 1): cancelled})
    assert tx.drop_reaps == [(3, 1)]
    assert [(j.id, j.state) for j in tx.jobs] == [(3, JobState.CANCELLED)]
    assert [e.kind for e in tx.events] == ["job_exit_after_settle"]
    assert fx.ended == [Ended(node, tx.jobs[0], 1, True)] and fx.kills == []


def test_an_exit_in_question_is_not_decided_without_its_events() -> None:
    node = linked()
    cancelled = job(3, state=JobState.CANCELLED)
    reaps = {(3, 1): Reap(3, 1, "n1", "cancel")}
    with pytest.raises(KeyError):  # the shell reads them first (journaled._fetch)
        decide_batch({}, reaps, node, [exited(1, 3)], Fetched(stored={3: cancelled}),
                     reaping={(3, 1): cancelled})


def test_an_attempt_queue_db_never_dispatched_raises_the_store_behind_alert() -> None:
    node = linked()
    batch = Batch({}, {}, {}, node)
    batch.decide(started(1, 40), Fetched(stored={40: None}))
    batch.decide(exited(2, 40), Fetched(stored={40: None}))
    tx, fx = batch.result()
    assert [ev.seq for ev in batch.unknown] == [1, 2]  # the shell keeps their ids
    assert tx.jobs == [] and len(tx.alerts) == 1  # the exit says how it ended; once
    assert fx.acks == [(node, 2)] and tx.node_seq == NodeSeq("n1", "j1", 2)


def test_a_purged_job_is_not_unknown() -> None:
    node = linked()
    fetched = Fetched(stored={40: None}, dispatched=frozenset({40}))
    batch = Batch({}, {}, {}, node)
    batch.decide(exited(1, 40), fetched)
    tx, _ = batch.result()
    assert batch.unknown == [] and tx.alerts == [] and tx.jobs == []


def test_nothing_shares_a_commit_before_the_node_is_reconciled() -> None:
    node = linked()
    node.reconciled = False
    assert not Batch({1: job(1)}, {}, {}, node).plain(exited(1, 1))
