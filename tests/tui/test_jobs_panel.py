"""The jobs panel's own rules, without a daemon: the filter, the order (active first,
then the newest finished), and a table changed row by row that always shows exactly
what a table built from scratch would."""

from __future__ import annotations

import asyncio
import random

import pytest

pytest.importorskip("textual")

from textual.app import App, ComposeResult

from nvq.model import Job, JobState
from nvq.tui.jobs_view import JobFilter, JobsView, order_key, row
from nvq.tui.tables import JobsTable

STATES = list(JobState)


def job(id: int, state: JobState = JobState.PENDING, **kw: object) -> Job:
    fields: dict[str, object] = {
        "id": id,
        "name": f"job-{id}",
        "state": state,
        "command": "python train.py",
        "user": "ana",
        "submitter": "ana",
        "created_at": 1000.0 + id,
    }
    if state.finished:
        fields["ended_at"] = 5000.0 + id * 7 % 13
    fields.update(kw)
    return Job(**fields)  # type: ignore[arg-type]


def test_filter_words_and_fields() -> None:
    f = JobFilter.parse("state:running,pending user:bo tag:sweep lr=0.1")
    assert f.states == {"running", "pending"} and f.users == {"bo"} and f.tags == {"sweep"}
    hit = job(1, JobState.RUNNING, user="bo", tags=["sweep"], command="train lr=0.1")
    assert f.matches(hit)
    assert not f.matches(job(2, JobState.RUNNING, user="bo", tags=["sweep"]))
    assert not f.matches(job(3, JobState.FAILED, user="bo", tags=["sweep"], command="lr=0.1"))
    assert JobFilter.parse('"unclosed').matches(job(4, note='an "unclosed note'))


def test_active_jobs_come_first_then_the_newest_finished() -> None:
    view = JobsView()
    shown = view.load(
        [
            job(1, JobState.COMPLETED, ended_at=10.0),
            job(2, JobState.RUNNING),
            job(3, JobState.FAILED, ended_at=30.0),
            job(4, JobState.PENDING),
        ]
    )
    assert [j.id for j in shown] == [2, 4, 3, 1]


def test_a_waiting_job_says_why() -> None:
    cells = row(job(5, JobState.PENDING, reason="waiting for a node with room"))
    assert cells[1] == "pending" and cells[-1] == "waiting for a node with room"


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield JobsTable(id="jobs")


def table_ids(table: JobsTable) -> list[int]:
    return [int(str(table.get_row_at(i)[0])) for i in range(table.row_count)]


def expected_ids(jobs: dict[int, Job], text: str) -> list[int]:
    f = JobFilter.parse(text)
    return [j.id for j in sorted((j for j in jobs.values() if f.matches(j)), key=order_key)]


@pytest.mark.parametrize("seed", range(4))
def test_rows_changed_one_by_one_match_a_table_built_afresh(seed: int) -> None:
    rng = random.Random(seed)
    text = rng.choice(["", "state:pending,running", "job-1"])

    async def main() -> None:
        app = TableApp()
        async with app.run_test() as pilot:
            table = app.query_one(JobsTable)
            jobs = {i: job(i, rng.choice(STATES)) for i in range(1, 40)}
            table.load(list(jobs.values()))
            table.set_filter(text)
            next_id = 40
            for _ in range(30):
                batch: list[Job] = []
                for _ in range(rng.randint(1, 4)):
                    if rng.random() < 0.4:
                        id, next_id = next_id, next_id + 1
                    else:
                        id = rng.choice(list(jobs))
                    batch.append(job(id, rng.choice(STATES)))
                gone = [rng.choice(list(jobs))] if rng.random() < 0.1 else []
                rng.shuffle(batch)
                table.apply(batch, gone)
                jobs.update((j.id, j) for j in batch)
                for id in gone:
                    jobs.pop(id, None)
                await pilot.pause()
                assert table_ids(table) == expected_ids(jobs, text)
                for id in table_ids(table):
                    assert tuple(str(c) for c in table.get_row(str(id))) == row(jobs[id])

    asyncio.run(main())


def test_what_users_typed_is_shown_literally_never_as_markup() -> None:
    from textual.widgets._data_table import default_cell_formatter

    name = "[reverse]AB[/]CD"

    async def main() -> None:
        app = TableApp()
        async with app.run_test() as pilot:
            table = app.query_one(JobsTable)
            table.load([job(1, name=name, reason="[bold]x[/bold]")])
            await pilot.pause()
            shown = [default_cell_formatter(c) for c in table.get_row("1")]
            assert [getattr(t, "plain", None) for t in shown][3] == name
            assert not any(getattr(t, "spans", None) for t in shown)

    asyncio.run(main())


def test_the_detail_line_names_an_image_jobs_image() -> None:
    from nvq.tui.app import detail_line

    job = Job(id=3, name="train", state=JobState.PENDING, command="python t.py", user="u",
              submitter="u", created_at=0.0, image="reg.lab/train:3")
    assert "image: reg.lab/train:3" in detail_line(job, None)
    bare = Job(id=4, name="x", state=JobState.PENDING, command="true", user="u",
               submitter="u", created_at=0.0)
    assert "image" not in detail_line(bare, None)
