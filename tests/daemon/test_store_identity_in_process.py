"""A queue.db that is behind its nodes (restored, fresh, or damaged), in-process with
fake runners: the node is reconciled and takes work, job ids continue after every id
a node has seen, and what a node reports about jobs the store never saw is alerted
once instead of being applied to the job that took the id."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from nvq.daemon.core.state import State
from nvq.model import JobState
from nvq.store import alerts as alert_table
from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, job_now, running_daemon, submit
from tests.fakes.runner import FakeRunner


class UsedRunner(FakeRunner):
    """A runner that already served a queue: its hello says which, and how far."""

    def __init__(self, *, queue_id: str = "", max_job_id: int = 0, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.queue_id = queue_id
        self.max_job_id = max_job_id

    def hello(self) -> p.Hello:
        return msgspec.structs.replace(
            super().hello(), queue_id=self.queue_id, max_job_id=self.max_job_id
        )


def ran_before(runner: FakeRunner, job_id: int, code: int, *, acked: bool) -> None:
    """Attempt 1 of `job_id` started and exited here before this daemon's time."""
    now = time.time()
    runner.record(lambda seq: p.JobStarted(seq, job_id, 1, 9000 + job_id, now), deliver=False)
    runner.record(lambda seq: p.JobExited(seq, job_id, 1, code, None, now, "exit"), deliver=False)
    if acked:
        runner.acked = runner.head


async def alert_messages(core: State) -> list[str]:
    found = await core.store.sync(lambda c: alert_table.alerts(c, include_acked=True))
    return [a.message for a in found]


def test_a_node_ahead_of_a_fresh_store_is_reconciled_and_ids_continue(tmp_path: Path) -> None:
    async def main() -> None:
        runner = UsedRunner(queue_id="0123456789abcdef", max_job_id=7)
        for job_id in range(1, 8):
            ran_before(runner, job_id, 0, acked=True)  # nothing left to replay
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            node = core.nodes["local"]
            await eventually(lambda: node.reconciled)
            job = await submit(core, gpus=1)
            assert job.id == 8
            await runner.until(lambda: any(s.job_id == 8 for s in runner.of_type(p.Start)))
            start = next(s for s in runner.of_type(p.Start) if s.job_id == 8)
            assert start.queue_id == core.store.queue_id != ""
            assert start.nonce == (await job_now(core, 8)).nonce != ""
            assert core.store_behind.missing["local"] == set(range(1, 8))
            messages = await alert_messages(core)
            assert any("journal names jobs up to 7" in m for m in messages), messages

    run(main)


def test_events_about_jobs_the_store_never_saw_are_alerted_not_applied(tmp_path: Path) -> None:
    async def main() -> None:
        first = FakeRunner(exits={1: 0})
        async with first, running_daemon(tmp_path, {"local": first}) as core:
            done = await submit(core, gpus=1)
            await eventually(lambda: done.id not in core.jobs)
            queue_id = core.store.queue_id
            kept = first.journal
        # The node ran job 2 for this queue; queue.db lost it (restored from before).
        runner = UsedRunner(queue_id=queue_id, max_job_id=2, exits={2: 0})
        runner.journal = list(kept)
        runner.acked = runner.head
        ran_before(runner, 2, 4, acked=False)  # its exit is replayed on connect
        runner.reachable = False
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            reused = await submit(core, gpus=1)  # before the node said hello: id 2
            assert reused.id == 2
            runner.reachable = True
            await runner.until(lambda: runner.acked == runner.head and runner.head >= 6)
            await eventually(lambda: reused.id not in core.jobs)
            job = await job_now(core, reused.id)
            # Its own run, not the old job 2's exit 4.
            assert (job.state, job.exit_code) == (JobState.COMPLETED, 0)
            messages = await alert_messages(core)
            said = [m for m in messages if "ran job 2 (exit 4)" in m]
            assert len(said) == 1, messages
            assert "restored from an older backup" in said[0]
            later = await submit(core, gpus=1)
            assert later.id == 3

    run(main)
