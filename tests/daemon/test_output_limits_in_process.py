"""The queue's limits on a job's output reach the runner (`[queue] max_result`,
`max_log_size`, `max_log_tail`), and what the runner could not keep is stored and
shown."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from nvq import control as c
from nvq.cli.render.jobs import job_detail
from nvq.daemon.handlers.logs import open_logs
from nvq.domain.request import view_of
from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, job_now, running_daemon, submit
from tests.fakes.runner import FakeRunner

LIMITS = '[queue]\nmax_result = "2MiB"\nmax_log_size = "64MiB"\nmax_log_tail = "1MiB"\n'
MIB = 1024 * 1024


def test_limits_reach_the_runner_and_what_it_cut_is_shown(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            FakeRunner() as runner,
            running_daemon(tmp_path, {"local": runner}, LIMITS) as core,
        ):
            job = await submit(core, gpus=1)
            await runner.until(lambda: bool(runner.of_type(p.Start)))
            start = runner.of_type(p.Start)[0]
            assert (start.max_result, start.max_log_size) == (2 * MIB, 64 * MIB)

            logs = await open_logs(core, job.id, lines=10, follow=False, stream="stdout")
            await runner.until(lambda: bool(runner.of_type(p.Tail)))
            assert runner.of_type(p.Tail)[0].max_bytes == MIB
            runner.send(p.LogData(req=runner.of_type(p.Tail)[0].req, eof=True))
            assert [chunk async for chunk in logs] == []

            why = "result.json is 100 MiB, over the 2 MiB limit"
            del runner.active[(job.id, 1)]
            runner.record(
                lambda seq: p.JobExited(
                    seq,
                    job.id,
                    1,
                    0,
                    None,
                    time.time(),
                    "exit",
                    result_error=why,
                    log_truncated=True,
                )
            )
            await eventually(lambda: job.id not in core.jobs)
            done = await job_now(core, job.id)
            assert (done.result, done.result_error, done.log_truncated) == (None, why, True)
            text = job_detail(msgspec.convert(msgspec.to_builtins(view_of(done)), c.JobDetail))
            assert f"not kept: {why}" in text
            assert "output cut: over max_log_size" in text

    run(main)
