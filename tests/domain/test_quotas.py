"""Limits per account, the pure part: a rolling day's use, when it falls back under
a limit, and which limit holds a job back."""

from __future__ import annotations

import pytest

from nvq.domain import quotas as q

HOUR = 3600.0
NOW = 10 * q.DAY


def test_a_rolling_day_counts_only_what_ran_within_it() -> None:
    spans = [
        q.Span(NOW - 25 * HOUR, NOW - 23 * HOUR, 1.0),  # its last hour is within the day
        q.Span(NOW - 2 * HOUR, NOW - HOUR, 2.0),  # two cards for an hour
        q.Span(NOW - 30 * HOUR, NOW - 26 * HOUR, 4.0),  # all of it before the day
    ]
    assert q.day_use(spans, NOW) == pytest.approx(3 * HOUR)


def test_free_at_is_when_the_day_falls_back_under_the_limit() -> None:
    spans = [q.Span(NOW - 23 * HOUR, NOW - 21 * HOUR, 1.0)]  # 2 GPU-h, leaving over 2 hours
    assert q.free_at(spans, 3 * HOUR, NOW) == NOW  # under already
    # Under 1.5 GPU-h once half an hour of it has left the day: in 1.5 hours.
    assert q.free_at(spans, 1.5 * HOUR, NOW) == pytest.approx(NOW + 1.5 * HOUR, abs=0.01)
    assert q.day_use(spans, q.free_at(spans, 1.5 * HOUR, NOW)) < 1.5 * HOUR


def test_which_limit_holds_a_job_back() -> None:
    s = q.Standing(user="ana", running_gpus=3, running_jobs=2, max_gpus=4, max_jobs=3)
    assert s.blocks(1) is None
    assert s.blocks(2) == q.QUOTA_GPUS
    assert (
        s.detail(q.QUOTA_GPUS, 2)
        == "ana holds 3 GPUs, at most 4 (max_running_gpus); this job needs 2"
    )
    s.took(1)
    assert s.blocks(0) == q.QUOTA_JOBS  # three jobs running: not even a CPU job
    hours = q.Standing(
        user="bo",
        running_gpus=0,
        running_jobs=0,
        max_gpus=None,
        max_jobs=None,
        day_gpu_seconds=12 * HOUR,
        max_gpu_hours=12,
    )
    assert hours.blocks(1) == q.QUOTA_HOURS
    assert hours.detail(q.QUOTA_HOURS, 1) == (
        "bo used 12.0 GPU-h in the last day, at most 12 (max_gpu_hours)"
    )


def test_caps_count_down_and_copies_do_not_share() -> None:
    caps = q.Caps(
        [q.Standing(user="ana", running_gpus=0, running_jobs=0, max_gpus=2, max_jobs=None)]
    )
    copy = caps.copy()
    assert caps.allows("ana", 2) and caps.allows("someone else", 8)
    caps.took("ana", 2)
    assert not caps.allows("ana", 1)
    assert copy.allows("ana", 2)
