"""The usage report's sums in SQL, on a real queue.db: reserved against used, first
waits and their nearest-rank 90th percentile, preemptions, outcomes, tags counted
once in the total; and the rows put together (`nvq.domain.report.build`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from nvq.domain import report as rp
from nvq.domain.request import record_of
from nvq.model import Charge, Job, JobRecord, JobState
from nvq.store import schema, usage
from nvq.store.jobs import insert
from nvq.store.report import read_window

H = 3600.0


def _job(id: int, user: str, state: JobState, tags: list[str], created: float) -> JobRecord:
    return record_of(Job(
        id=id,
        name="j",
        state=state,
        command="true",
        user=user,
        submitter=user,
        created_at=created,
        tags=tags,
        ended_at=created + 2 * H,
        node="gpu1",
    ))


def _charge(job: int, user: str, **kw: object) -> Charge:
    fields: dict[str, object] = {
        "attempt": 1,
        "node": "gpu1",
        "started_at": 1000.0,
        "ended_at": 1000.0 + H,
        "weight": 1.0,
        "cards": 1,
        "dispatched_at": 1000.0,
        "outcome": "completed",
    }
    fields.update(kw)
    return Charge(job_id=job, user=user, submitter=user, **fields)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "queue.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema.migrate(conn)
    conn.execute("BEGIN")
    # Waits (dispatch − submission) of ana's ten first attempts: 10, 20, ..., 100 s.
    jobs = [_job(i, "ana", JobState.COMPLETED, ["a", "b"], 1000.0 - 10 * i) for i in range(1, 11)]
    jobs.append(_job(11, "bo", JobState.FAILED, [], 1000.0))
    insert(conn, [msgspec.structs.replace(j, rank=float(j.id)) for j in jobs])
    charges = [_charge(i, "ana", weight=0.25) for i in range(1, 11)]
    charges.append(_charge(1, "ana", attempt=2, outcome="preempted", dispatched_at=1000.0 - H))
    charges.append(_charge(11, "bo", cards=2, weight=2.0, dispatched_at=None))
    usage.save(conn, [], charges)
    conn.execute("COMMIT")
    conn.close()
    return path


def test_sums_by_user_and_the_total(db: Path) -> None:
    rows, total = read_window(db, 0.0, 1e9, "user")
    doc = rp.build(rows, total, by="user", since=0.0, until=1e9)
    ana, bo = doc.rows  # most used first: ana's 3.5 GPU-h before bo's 2
    assert (ana.key, bo.key) == ("ana", "bo")
    assert ana.gpu_hours_used == pytest.approx(10 * 0.25 + 1)
    assert ana.gpu_hours_reserved == pytest.approx(10 + 2)  # the preempted one held 2 h
    assert bo.gpu_hours_reserved == pytest.approx(2)  # no dispatch known: from its start
    assert ana.attempts == 11 and ana.preemptions == 1
    assert ana.wait_mean_s == pytest.approx(55.0) and ana.wait_p90_s == 90.0
    assert rp.p90([10.0 * i for i in range(1, 11)]) == 90.0  # the same rank in Python
    assert bo.wait_mean_s is None  # its only attempt has no dispatch time
    assert ana.jobs["completed"] == 10 and ana.failure_rate == 0.0
    assert bo.jobs["failed"] == 1 and bo.failure_rate == 1.0
    assert doc.total.attempts == 12 and doc.total.failure_rate == pytest.approx(1 / 11)


def test_by_tag_a_job_counts_in_each_of_its_tags_but_once_in_the_total(db: Path) -> None:
    rows, total = read_window(db, 0.0, 1e9, "tag")
    doc = rp.build(rows, total, by="tag", since=0.0, until=1e9)
    by_key = {r.key: r for r in doc.rows}
    assert set(by_key) == {"a", "b", rp.NO_TAG}
    assert by_key["a"].attempts == by_key["b"].attempts == 11
    assert doc.total.attempts == 12
    assert sum(doc.total.jobs.values()) == 11


def test_a_window_takes_what_ended_in_it(db: Path) -> None:
    rows, total = read_window(db, 0.0, 1000.0, "user")  # everything ended after 1000
    doc = rp.build(rows, total, by="user", since=0.0, until=1000.0)
    assert doc.rows == [] and doc.total.attempts == 0 and doc.total.failure_rate is None
    with pytest.raises(ValueError, match="--by 'x'"):
        rp.build(rows, total, by="x", since=0.0, until=1.0)
