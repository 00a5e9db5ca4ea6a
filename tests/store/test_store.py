"""queue.db through `nvq.store`: a transition commits whole, old files open, and a
file from a newer nvq is refused."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState, NewEvent, NodeSeq, Reap, Tx
from nvq.store import MIGRATIONS, SCHEMA_VERSION, Store, StoreError, busy, meta

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend="asyncio")


def new_job(**kw: object) -> JobRecord:
    base: dict[str, object] = dict(
        id=0,
        name="train",
        state=JobState.PENDING,
        command="python train.py",
        user="alice",
        submitter="alice",
        created_at=1.0,
        env={"A": "1"},
        tags=["x"],
        after=[],
    )
    base.update(kw)
    return record_of(Job(**base))  # type: ignore[arg-type]


def test_a_transition_commits_whole_and_reads_back(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"

    async def write() -> list[JobRecord]:
        store = await Store.open(db)
        inserted = await store.commit(
            Tx(
                new_jobs=[new_job(), new_job(name="eval")],
                events=[NewEvent("node_up", node="n1", data={"why": "hello"})],
                node_seq=NodeSeq("n1", "j1", 5),
                add_reaps=[Reap(1, 1, "n1", "cancelled")],
                lanes=[("n1:0", True)],
            )
        )
        await store.save_node("n1", facts={"gpus": 2}, drained=True)
        await store.sync(lambda c: busy.set_busy_mode(c, "n1", "on"))
        await store.sync(lambda c: meta.set_meta(c, "k", "v"))
        await store.close()
        return inserted

    inserted = run(write)
    assert [j.id for j in inserted] == [1, 2]

    async def read() -> None:
        store = await Store.open(db)
        assert (await store.job(1)) == new_job(id=1, rank=1.0)  # ranked by its id
        assert [j.spec.name for j in await store.jobs(newest_first=True)] == ["eval", "train"]
        assert await store.states_of([1, 2, 3]) == {1: JobState.PENDING, 2: JobState.PENDING}
        assert await store.state_counts() == {"pending": 2}
        kinds = [(e.kind, e.job_id) for e in await store.events()]
        assert kinds == [("job_submitted", 1), ("job_submitted", 2), ("node_up", None)]
        node = (await store.nodes())["n1"]
        assert (node.journal_id, node.applied_seq, node.facts, node.drained) == (
            "j1",
            5,
            {"gpus": 2},
            True,
        )
        assert await store.reaps() == [Reap(1, 1, "n1", "cancelled")]
        assert await store.lanes() == {"n1:0": True}
        assert await store.sync(busy.busy_modes) == {"n1": "on"}
        assert await store.sync(lambda c: meta.get_meta(c, "k")) == "v"
        assert await store.next_job_id() == 3
        await store.commit(Tx(delete_jobs=[2], drop_reaps=[(1, 1)]))
        assert await store.finished_ids(None) == []
        assert [j.id for j in await store.jobs()] == [1] and await store.reaps() == []
        # Ids are never reused, even after a purge.
        assert await store.next_job_id() == 3
        await store.close()

    run(read)


def test_a_failed_transition_leaves_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        store = await Store.open(tmp_path / "queue.db")
        job = new_job()
        with pytest.raises(sqlite3.IntegrityError):
            # The second row repeats the first one's id: the whole batch is refused.
            await store.commit(Tx(new_jobs=[job, new_job(id=1)]))
        assert job.id == 0
        assert await store.jobs() == [] and await store.events() == []
        await store.close()

    run(main)


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_a_queue_db_of_an_older_version_opens(tmp_path: Path, version: int) -> None:
    db = tmp_path / "queue.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migration in MIGRATIONS[:version]:
        conn.executescript(migration)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
    # A row as the first nvq wrote it: only the columns of version 1.
    conn.execute(
        "INSERT INTO jobs (name, state, command, user, submitter, created_at, gpus_requested, "
        "vram_mb, priority, env, tags, note, after, after_any, attempt, gpus) VALUES "
        "('old', 'completed', 'true', 'bob', 'bob', 5.0, 1, 0, 0, '{}', '[]', '', '[]', '[]', "
        "1, '[0]')"
    )
    conn.close()

    async def main() -> None:
        store = await Store.open(db)
        (job,) = await store.jobs()
        assert (job.id, job.spec.name, job.state, job.gpus) == (1, "old", JobState.COMPLETED, [0])
        assert (job.spec.email_on_failure, job.spec.no_reassign, job.spec.max_runtime) == (None, False, None)
        assert await store.finished_ids(None) == [1]
        await store.close()

    run(main)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_queue_db_from_a_newer_nvq_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    conn.close()
    with pytest.raises(StoreError, match=r"newer than this nvq knows.*upgrade nvq"):
        run(lambda: Store.open(db))
