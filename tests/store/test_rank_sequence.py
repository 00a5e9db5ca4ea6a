"""The dispatch order is a sequence the store hands out, never the wall clock: a new
job's rank is its id, and a queue.db whose ranks were submit times is renumbered in
the same order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

from nvq.domain.request import record_of
from nvq.model import Job, JobRecord, JobState, Tx
from nvq.store import MIGRATIONS, Store


def _job(name: str, created_at: float) -> JobRecord:
    return record_of(Job(
        id=0, name=name, state=JobState.PENDING, command="true", user="u", submitter="u",
        created_at=created_at, rank=0.0,
    ))


def test_a_new_job_is_ranked_by_its_id_not_its_clock(tmp_path: Path) -> None:
    async def main() -> list[tuple[int, float]]:
        store = await Store.open(tmp_path / "queue.db")
        await store.commit(Tx(new_jobs=[_job("first", 10_000.0)]))
        await store.commit(Tx(new_jobs=[_job("after-clock-step", 10_000.0 - 3600)]))
        jobs = await store.jobs()
        await store.close()
        return [(j.id, j.rank) for j in jobs]

    assert anyio.run(main) == [(1, 1.0), (2, 2.0)]


def test_time_ranks_are_renumbered_in_their_order(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migration in MIGRATIONS[:4]:
        conn.executescript(migration)
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (4)")
    # Job 1 was moved behind job 3 (rank between), job 2 submitted last by the clock.
    for name, rank in (("a", 1700000050.5), ("b", 1700000100.0), ("c", 1700000020.0)):
        conn.execute(
            "INSERT INTO jobs (name, state, command, user, submitter, created_at, "
            "gpus_requested, vram_mb, priority, env, tags, note, after, after_any, attempt, "
            "gpus, rank) VALUES (?, 'pending', 'true', 'u', 'u', 1.0, 1, 0, 0, '{}', '[]', "
            "'', '[]', '[]', 0, '[]', ?)",
            (name, rank),
        )
    conn.close()

    async def main() -> list[tuple[str, float]]:
        store = await Store.open(db)
        await store.commit(Tx(new_jobs=[_job("d", 1.0)]))
        jobs = await store.jobs()
        await store.close()
        return sorted(((j.spec.name, j.rank) for j in jobs), key=lambda x: x[1])

    assert anyio.run(main) == [("c", 1.0), ("a", 2.0), ("b", 3.0), ("d", 4.0)]
