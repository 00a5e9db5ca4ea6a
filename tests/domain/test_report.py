"""The usage report's arithmetic, pure: reserved against used, outcomes, waits,
preemptions, and the keys a row is made of."""

from __future__ import annotations

import pytest

from nvq.domain import report as rp

H = 3600.0


def _attempt(job: int, user: str, **kw: object) -> rp.AttemptRow:
    fields: dict[str, object] = {
        "attempt": 1,
        "submitter": "",
        "node": "gpu1",
        "started_at": 100.0,
        "ended_at": 100.0 + H,
        "weight": 1.0,
        "cards": 1,
        "dispatched_at": 99.0,
        "outcome": "completed",
        "created_at": 90.0,
    }
    fields.update(kw)
    return rp.AttemptRow(job_id=job, user=user, **fields)  # type: ignore[arg-type]


def test_rows_by_user_with_reserved_used_waits_and_preemptions() -> None:
    attempts = [
        _attempt(
            1, "ana", weight=0.25, dispatched_at=100.0 - H, created_at=91.0 - H
        ),  # ¼ card, held 2 h
        _attempt(2, "ana", outcome="preempted", created_at=0.0),
        _attempt(2, "ana", attempt=2, created_at=0.0, dispatched_at=5000.0),  # no first wait
        _attempt(3, "bo", cards=2, weight=2.0),
    ]
    jobs = [
        rp.EndedJob(user="ana", submitter="", node="gpu1", state="completed", ended_at=200.0),
        rp.EndedJob(user="ana", submitter="", node="gpu1", state="timeout", ended_at=200.0),
        rp.EndedJob(user="bo", submitter="", node="gpu1", state="cancelled", ended_at=200.0),
    ]
    doc = rp.build(attempts, jobs, by="user", since=0.0, until=1e9)
    ana, bo = doc.rows[0], doc.rows[1]
    assert (bo.key, ana.key) == ("bo", "ana")  # most used first
    assert ana.gpu_hours_used == pytest.approx(0.25 + 1 + 1)
    assert ana.gpu_hours_reserved == pytest.approx(2 + (H + 1) / H)  # the last: none held
    assert ana.preemptions == 1 and ana.attempts == 3
    assert ana.jobs["completed"] == 1 and ana.jobs["timeout"] == 1
    assert ana.failure_rate == 0.5 and bo.failure_rate == 0.0
    assert ana.wait_mean_s == pytest.approx((9.0 + 99.0) / 2)  # first attempts only
    assert doc.total.attempts == 4 and doc.total.gpu_hours_used == pytest.approx(4.25)


def test_keys_tags_nodes_days_and_the_nearest_rank_p90() -> None:
    tagged = _attempt(1, "ana", tags=["a", "b", "a"])
    untagged = _attempt(2, "ana", node=None)
    by_tag = rp.build([tagged, untagged], [], by="tag", since=0, until=1)
    assert sorted(r.key for r in by_tag.rows) == [rp.NO_TAG, "a", "b"]
    assert sorted(r.key for r in rp.build([untagged], [], by="node", since=0, until=1).rows) == [
        "(no node)"
    ]
    assert rp.p90([float(i) for i in range(1, 11)]) == 9.0
    assert rp.p90([3.0]) == 3.0
    with pytest.raises(ValueError, match="--by 'x'"):
        rp.build([], [], by="x", since=0, until=1)
