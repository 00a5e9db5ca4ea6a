"""Group commit, in-process: runner events that arrive together commit together, and
every one of them is applied, acknowledged and followed by the next placement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nvq.model import JobState, Tx
from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, job_now, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_a_burst_of_exits_is_one_transaction_and_the_next_jobs_start(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            first = [await submit(core, vram_mb=1024) for _ in range(4)]
            await runner.until(lambda: len(runner.active) == 4)
            queued = [await submit(core, vram_mb=23 * 1024) for _ in range(2)]
            commits: list[Tx] = []
            real_commit = core.store.commit

            async def counting(tx: Tx) -> Any:
                commits.append(tx)
                return await real_commit(tx)

            core.store.commit = counting  # type: ignore[method-assign]
            seqs = [runner.exit(job.id, 0, deliver=False) for job in first]
            runner.send_together(runner.journal[-4:])
            await runner.until(lambda: runner.acked == seqs[-1])
            ended = [await job_now(core, job.id) for job in first]
            assert [j.state for j in ended] == [JobState.COMPLETED] * 4
            with_exits = [
                tx for tx in commits if any(j.state is JobState.COMPLETED for j in tx.jobs)
            ]
            assert len(with_exits) == 1
            assert with_exits[0].node_seq is not None and with_exits[0].node_seq.seq == seqs[-1]
            # The cards they freed go to the jobs that waited, after that one commit.
            await runner.until(lambda: len(runner.active) == 2)
            await eventually(lambda: all(core.jobs[j.id].state is JobState.RUNNING for j in queued))
            assert len(runner.of_type(p.Start)) == 6

    run(main)


def test_an_event_that_needs_more_than_the_plain_path_still_applies(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            job = await submit(core, vram_mb=1024)
            await runner.until(lambda: len(runner.active) == 1)
            exit_seq = runner.exit(job.id, 0, deliver=False)
            # An exit for an attempt the daemon never dispatched, then a real one.
            stray = p.JobExited(exit_seq + 1, 999, 1, 0, None, 0.0, "exit")
            runner.journal.append(stray)
            runner.send_together([runner.journal[-2], stray])
            await runner.until(lambda: runner.acked == exit_seq + 1)
            assert (await job_now(core, job.id)).state is JobState.COMPLETED

    run(main)
