"""queue.db cannot be written for space, in-process (the commit fails as SQLite fails
it on a full disk): the daemon keeps answering and says so, the runner's events stay
unacknowledged in its journal, and once space returns each exit is applied with its
real exit code and the spell is alerted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nvq import control as c
from nvq.daemon.handlers.queue import status
from nvq.model import JobState, Tx
from nvq.store import alerts as alert_table
from nvq.store import core as store_core
from tests.fakes.aio import run
from tests.fakes.daemon import _contexts, eventually, job_now, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_exits_wait_for_space_then_arrive_with_their_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = False
    real_commit = store_core._commit

    def commit(conn: sqlite3.Connection, tx: Tx) -> object:
        if full:
            raise sqlite3.OperationalError("database or disk is full")
        return real_commit(conn, tx)

    monkeypatch.setattr(store_core, "_commit", commit)

    async def main() -> None:
        nonlocal full
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            jobs = [await submit(core, gpus=1) for _ in range(2)]
            await runner.until(lambda: len(runner.active) == 2 and runner.acked == runner.head)
            full = True
            seqs = [runner.exit(job.id, code) for job, code in zip(jobs, (3, 0), strict=True)]
            await eventually(lambda: core.store.writes_waiting > 0)
            assert runner.acked < seqs[0]  # still in the node's journal
            assert all(core.jobs[j.id].state is JobState.RUNNING for j in jobs)
            stored = await core.store.job(jobs[0].id)  # reads go on
            assert stored is not None and stored.state is JobState.RUNNING
            doc = await status(_contexts[id(core)], c.Status(), "tester")
            assert doc.disk_full is not None
            assert doc.disk_full.startswith("disk full on the queue host since")

            full = False
            await runner.until(lambda: runner.acked >= seqs[-1])
            ended = [await job_now(core, j.id) for j in jobs]
            assert [(j.state, j.exit_code) for j in ended] == [
                (JobState.FAILED, 3),
                (JobState.COMPLETED, 0),
            ]
            doc = await status(_contexts[id(core)], c.Status(), "tester")
            assert doc.disk_full is None
            found = await core.store.sync(lambda conn: alert_table.alerts(conn, include_acked=True))
            assert any(a.message.startswith("disk full on the queue host") for a in found)

    run(main)
