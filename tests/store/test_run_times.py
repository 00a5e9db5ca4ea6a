"""Completed runs' durations per command and per array: what the estimated start takes
a command's typical run from (the newest 20 completed runs; others do not count)."""

from __future__ import annotations

from pathlib import Path

from nvq.model import JobState, Tx
from nvq.store import Store
from nvq.store.run_times import NEWEST
from tests.store.test_store import new_job, run


def test_completed_runs_per_command_and_array_newest_first(tmp_path: Path) -> None:
    async def main() -> None:
        store = await Store.open(tmp_path / "queue.db")
        jobs = [
            new_job(command="train", state=JobState.COMPLETED, started_at=0.0, ended_at=60.0),
            new_job(command="train", state=JobState.COMPLETED, started_at=100.0, ended_at=190.0),
            new_job(command="train", state=JobState.FAILED, started_at=0.0, ended_at=5.0),
            new_job(command="eval", state=JobState.COMPLETED, started_at=0.0, ended_at=30.0,
                    array_id=7),
            new_job(command="train", state=JobState.RUNNING, started_at=0.0),
        ]
        await store.commit(Tx(new_jobs=jobs))
        by_command, by_array = await store.run_times({"train", "other"}, {7})
        assert by_command == {"train": [90.0, 60.0]}
        assert by_array == {7: [30.0]}
        assert await store.run_times(set(), set()) == ({}, {})
        many = [new_job(command="many", state=JobState.COMPLETED, started_at=float(i),
                        ended_at=float(2 * i)) for i in range(NEWEST + 5)]
        await store.commit(Tx(new_jobs=many))
        (runs,) = (await store.run_times({"many"}, set()))[0].values()
        assert runs == [float(i) for i in reversed(range(5, NEWEST + 5))]
        await store.close()

    run(main)
