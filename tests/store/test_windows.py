"""The store's reads for a long history: per-state counts kept by triggers (equal to a
real count after every kind of change, and after migrating an older queue.db), and the
newest-first window with its filters."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from nvq.domain.request import asking
from nvq.model import JobState, Tx
from nvq.store import MIGRATIONS, Store
from nvq.store.windows import JobFilter
from tests.store.test_store import new_job, run


def _counted(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
    conn.close()
    return dict(rows)


def test_counts_follow_inserts_transitions_and_purges(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"

    async def main() -> None:
        store = await Store.open(db)
        jobs = await store.commit(Tx(new_jobs=[new_job() for _ in range(5)]))
        assert await store.state_counts() == {"pending": 5} == _counted(db)
        done = [msgspec.structs.replace(j, state=JobState.COMPLETED) for j in jobs[:3]]
        await store.commit(Tx(jobs=done))
        noted = asking(done[0], note="same state, new note")
        failed = msgspec.structs.replace(jobs[3], state=JobState.FAILED)
        await store.commit(Tx(jobs=[noted, failed]))
        assert await store.state_counts() == {"pending": 1, "completed": 3, "failed": 1}
        await store.commit(Tx(delete_jobs=[jobs[0].id, jobs[3].id]))
        assert await store.state_counts() == {"pending": 1, "completed": 2} == _counted(db)
        await store.close()

    run(main)


def test_counts_start_from_the_rows_an_older_queue_db_holds(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migration in MIGRATIONS[:9]:
        conn.executescript(migration)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (9)")
    for state in ("completed", "completed", "failed", "pending"):
        conn.execute(
            "INSERT INTO jobs (name, state, command, user, submitter, created_at, "
            "gpus_requested, vram_mb, priority, env, tags, note, after, after_any, attempt, "
            "gpus) VALUES ('old', ?, 'true', 'bob', 'bob', 5.0, 1, 0, 0, '{}', '[]', '', "
            "'[]', '[]', 1, '[0]')",
            (state,),
        )
    conn.close()

    async def main() -> dict[str, int]:
        store = await Store.open(db)  # migration 10 counts the rows already there
        try:
            return await store.state_counts()
        finally:
            await store.close()

    assert run(main) == {"completed": 2, "failed": 1, "pending": 1} == _counted(db)


def test_the_window_is_newest_first_and_says_when_it_cut(tmp_path: Path) -> None:
    async def main() -> None:
        store = await Store.open(tmp_path / "queue.db")
        jobs = await store.commit(
            Tx(new_jobs=[new_job(user="bob" if i % 3 else "alice") for i in range(10)])
        )
        states = [JobState.COMPLETED if i % 2 else JobState.FAILED for i in range(10)]
        await store.commit(
            Tx(
                jobs=[
                    msgspec.structs.replace(j, state=s) for j, s in zip(jobs, states, strict=True)
                ]
            )
        )
        finished = {JobState.COMPLETED, JobState.FAILED}
        got, more = await store.newest_jobs(finished, JobFilter(), 4)
        assert [j.id for j in got] == [7, 8, 9, 10] and more
        got, more = await store.newest_jobs(finished, JobFilter(user="alice"), 4)
        assert [j.id for j in got] == [1, 4, 7, 10] and not more
        got, more = await store.newest_jobs({JobState.FAILED}, JobFilter(since_id=5), None)
        assert [j.id for j in got] == [5, 7, 9] and not more
        got, _ = await store.newest_jobs(finished, JobFilter(tag="x", array=3), None)
        assert got == []
        await store.close()

    run(main)
