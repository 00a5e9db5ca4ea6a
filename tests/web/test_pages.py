"""The rules behind the pages, without a browser: which finished jobs are listed,
the filters, who sees which button, and how a card's memory is split."""

from __future__ import annotations

import msgspec

from nvq.model import Job, JobState
from nvq.web import pages

NOW = 1_800_000_000.0
DAY = 86400.0


def _job(
    id: int,
    state: JobState,
    *,
    ended: float | None = None,
    user: str = "ann",
    tags: list[str] | None = None,
) -> Job:
    return Job(
        id=id, name=f"j{id}", state=state, command="true", user=user, submitter=user,
        created_at=(ended or NOW) - 10, started_at=(ended or NOW) - 5, ended_at=ended,
        tags=tags or [],
    )  # fmt: skip


ME = pages.Visitor("ann")


def test_completed_keeps_the_window_and_the_cap_newest_first() -> None:
    recent = [_job(i, JobState.COMPLETED, ended=NOW - i * 60) for i in range(1, 131)]
    old = [_job(200 + i, JobState.FAILED, ended=NOW - 31 * DAY) for i in range(5)]
    rows = pages.completed_rows(old + recent, pages.Filters(), ME, NOW)
    assert [r.job.id for r in rows] == list(range(1, 101))


def test_completed_leaves_out_active_jobs() -> None:
    jobs = [_job(1, JobState.RUNNING), _job(2, JobState.CANCELLED, ended=NOW - 5)]
    assert [r.job.id for r in pages.completed_rows(jobs, pages.Filters(), ME, NOW)] == [2]


def test_active_lists_running_jobs_first() -> None:
    jobs = [_job(1, JobState.PENDING), _job(2, JobState.RUNNING), _job(3, JobState.PAUSED)]
    assert [r.job.id for r in pages.active_rows(jobs, pages.Filters(), ME, NOW)] == [2, 1, 3]


def test_filters_by_state_user_and_tag() -> None:
    jobs = [
        _job(1, JobState.PENDING, user="ann", tags=["sweep"]),
        _job(2, JobState.PENDING, user="bob", tags=["sweep"]),
        _job(3, JobState.PAUSED, user="ann"),
    ]

    def keep(f: pages.Filters) -> list[int]:
        return [r.job.id for r in pages.active_rows(jobs, f, ME, NOW)]

    assert keep(pages.Filters(user="bob")) == [2]
    assert keep(pages.Filters(tag="sweep")) == [1, 2]
    assert keep(pages.Filters(state="paused")) == [3]


def test_buttons_only_for_the_owner_or_an_admin() -> None:
    theirs = _job(1, JobState.RUNNING, user="bob")
    mine = _job(2, JobState.RUNNING, user="ann")
    def names(job: Job, visitor: pages.Visitor = ME) -> list[str]:
        return [name for name, _ask in visitor.actions(job)]

    assert names(theirs) == []
    assert names(mine) == ["pause", "cancel"]
    assert names(theirs, pages.Visitor("root", frozenset({"root"}))) == ["pause", "cancel"]
    assert names(_job(3, JobState.PAUSED)) == ["resume", "cancel"]
    assert names(_job(4, JobState.FAILED, ended=NOW)) == ["requeue"]
    assert names(_job(5, JobState.HELD)) == ["release", "pause", "cancel"]


def test_what_stops_or_reruns_work_is_confirmed_first() -> None:
    asks = dict(ME.actions(_job(2, JobState.RUNNING)))
    assert asks["pause"].startswith("Pause job 2?") and asks["cancel"].startswith("Cancel job 2?")
    assert dict(ME.actions(_job(3, JobState.PAUSED)))["resume"] == ""
    assert dict(ME.actions(_job(6, JobState.PENDING)))["pause"] == ""  # nothing stops
    assert "again" in dict(ME.actions(_job(4, JobState.FAILED, ended=NOW)))["requeue"]
    assert dict(ME.actions(_job(5, JobState.HELD)))["release"].startswith("Release job 5?")


def test_sizes_and_runtimes_read_as_people_read_them() -> None:
    assert [pages.size(n) for n in (0, 512, 1536, 3 * 2**20, 5 * 2**30)] == [
        "0 B", "512 B", "1.5 KiB", "3.0 MiB", "5.0 GiB"]

    class A:
        def __init__(self, started: float | None, ended: float | None) -> None:
            self.started_at, self.ended_at = started, ended

    each, total = pages.attempt_runtimes([A(0, 90), A(100, None), A(None, None)], now=160)
    assert (each, total) == (["1m30s", "1m00s", ""], "2m30s")


def test_a_job_back_in_the_queue_shows_no_growing_runtime() -> None:
    started = msgspec.structs.replace(_job(7, JobState.RUNNING), started_at=NOW - 60)
    assert pages.runtime(started, NOW) == "1m00s"
    back = msgspec.structs.replace(started, state=JobState.PENDING)  # its node went away
    assert pages.runtime(back, NOW + 600) == ""


def test_a_paused_or_waiting_job_is_nowhere() -> None:
    paused = msgspec.structs.replace(_job(3, JobState.PAUSED), node="ws2", gpus=[0])
    assert pages.where(paused) == ""
    assert pages.where(msgspec.structs.replace(paused, state=JobState.RUNNING)) == "ws2:0"


def test_a_cards_memory_bar_adds_up_to_the_card() -> None:
    bar = pages.gpu_bar(24576, foreign_mb=6144, queue_mb=2048, reserved_mb=4096)
    assert (bar.foreign, bar.queue, bar.reserved, bar.free) == (25.0, 8.3, 8.3, 58.4)
    assert pages.gpu_bar(0, 0, 0, 0).free == 100
    over = pages.gpu_bar(1000, foreign_mb=900, queue_mb=300, reserved_mb=300)
    assert over.foreign + over.queue + over.reserved + over.free == 100


def test_durations_read_like_the_cli() -> None:
    assert [pages.duration(s) for s in (5, 125, 7260, 90000)] == ["5s", "2m05s", "2h01m", "1d01h"]
