"""`--begin`: a job waits for its time, and the placement loop's own timer starts it
then — no event from a node is needed (`tests/cli/test_begin.py` has the reason)."""

from __future__ import annotations

import time
from pathlib import Path

from nvq.model import JobState
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, job_now, memory_of, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_a_job_starts_at_its_begin_time_on_the_loops_timer(tmp_path: Path) -> None:
    async def main() -> None:
        runner = FakeRunner()
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            await eventually(lambda: core.nodes["local"].reconciled)
            await eventually(lambda: memory_of(core).pass_facts is not None)
            begin = time.time() + 1.0
            job = await submit(core, gpus=1, begin_at=begin)
            # Nothing else happens on this queue: only the timer can start it.
            await eventually(
                lambda: (j := core.jobs.get(job.id)) is not None and j.state is JobState.RUNNING
            )
            started = await job_now(core, job.id)
            assert started.dispatched_at is not None and started.dispatched_at >= begin

    run(main)
