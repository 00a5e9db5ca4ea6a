"""The daemon's reaction to runner events, in-process: real state and a real store,
fake runners speaking real frames. Replayed events apply once, an old attempt's exit
does not end a reassigned job, and a restarted daemon picks up where the store left
off."""

from __future__ import annotations

from pathlib import Path

from nvq.domain import attempts
from nvq.model import JobState
from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.daemon import (
    event_kinds,
    eventually,
    job_now,
    nodes_config,
    running_daemon,
    submit,
)
from tests.fakes.runner import FakeRunner


def test_replayed_events_apply_exactly_once(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner:
            runner.take_acks = False  # every event is replayed on the next connection
            async with running_daemon(tmp_path, {"local": runner}) as core:
                job = await submit(core)
                await runner.until(lambda: (job.id, 1) in runner.active)
                runner.exit(job.id, 0)
                await runner.until(lambda: len(runner.of_type(p.Ack)) == 2)
                await runner.drop()
                await runner.until(lambda: runner.connections == 2)
                # Hello, then seqs 1 and 2 again: the daemon acks them, applies nothing.
                await runner.until(lambda: len(runner.of_type(p.Ack)) == 4)
                runner.take_acks = True
                await runner.drop()
                await runner.until(lambda: runner.connections == 3)
                await runner.until(lambda: runner.acked == 2)
                assert [a.seq for a in runner.of_type(p.Ack)] == [1, 2, 1, 2, 1, 2]
                done = await job_now(core, job.id)
                assert (done.state, done.exit_code, done.attempt) == (JobState.COMPLETED, 0, 1)
                kinds = await event_kinds(core, job.id)
                assert kinds == ["job_submitted", "job_dispatched", "job_started", "job_completed"]
                assert len(runner.of_type(p.Start)) == 1

    run(main)


def test_an_exit_journaled_while_disconnected_is_applied_on_reconnect(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            FakeRunner(chunk=7) as runner,
            running_daemon(tmp_path, {"local": runner}) as core,
        ):
            job = await submit(core)
            await runner.until(lambda: runner.acked == 1)
            await runner.drop()
            runner.exit(job.id, 3)  # written, but nobody listens
            assert (await job_now(core, job.id)).state is JobState.RUNNING
            await runner.until(lambda: runner.acked == 2)
            failed = await job_now(core, job.id)
            assert (failed.state, failed.exit_code) == (JobState.FAILED, 3)
            assert (await event_kinds(core, job.id))[-2:] == ["job_started", "job_failed"]

    run(main)


def test_an_old_attempts_exit_that_came_first_ends_the_reassigned_job(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner(hostname="a") as a, FakeRunner(hostname="b") as b:
            b.reachable = False  # until the job runs on a
            config = nodes_config("a", "b")
            async with running_daemon(tmp_path, {"a": a, "b": b}, config) as core:
                job = await submit(core)
                await a.until(lambda: a.acked == 1)
                b.reachable = True
                a.reachable = False
                await a.drop()
                # a is down after node_grace: the job goes to b as attempt 2.
                await b.until(lambda: (job.id, 2) in b.active)
                await eventually(lambda: core.jobs[job.id].started_at is not None)
                assert (job.id, 1) in core.reaps  # a still owes the old attempt a kill

                a.exit(job.id, 0)  # attempt 1 ran on while a was away, and ended
                a.reachable = True
                await a.until(lambda: a.acked == 2)
                await eventually(lambda: (job.id, 1) not in core.reaps)
                # It ran to its end before attempt 2: its outcome stands, 2 stops.
                await b.until(lambda: bool(b.of_type(p.Kill)))
                await b.until(lambda: b.acked == 2)  # attempt 2's exit, from the kill
                done = await job_now(core, job.id)
                assert (done.state, done.node, done.attempt) == (JobState.COMPLETED, "a", 2)
                assert (await event_kinds(core, job.id)).count("job_completed") == 1
                (_, second) = [
                    (a.outcome, a.exit_code) for a in attempts.derive(
                        await core.store.events(job_id=job.id))
                ]
                assert second == ("superseded", 143)  # its real end, the kill's

    run(main)


def test_a_reassigned_attempts_exit_stands_when_it_has_not_run_again(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            FakeRunner(hostname="a") as a,
            running_daemon(tmp_path, {"a": a}, nodes_config("a")) as core,
        ):
            job = await submit(core)
            await a.until(lambda: a.acked == 1)
            a.reachable = False
            await a.drop()
            await eventually(lambda: core.jobs[job.id].state is JobState.PENDING)
            a.exit(job.id, 0)
            a.reachable = True
            await a.until(lambda: a.acked == 2)
            done = await job_now(core, job.id)
            assert (done.state, done.attempt, done.exit_code) == (JobState.COMPLETED, 1, 0)
            assert len(a.of_type(p.Start)) == 1  # not run a second time

    run(main)


def test_a_restarted_daemon_reconciles_from_the_store(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner:
            async with running_daemon(tmp_path, {"local": runner}) as core:
                first = await submit(core)
                second = await submit(core)
                await runner.until(lambda: runner.acked == 2)
            # While no daemon runs: the first job exits (journaled), the runner loses
            # all trace of the second, and an attempt the queue never knew appears.
            runner.exit(first.id, 0)
            del runner.active[(second.id, 1)]
            runner.active[(99, 1)] = p.ActiveJob(99, 1, 4321, 0.0)

            async with running_daemon(tmp_path, {"local": runner}) as core:
                assert {first.id, second.id} <= core.jobs.keys()  # rebuilt from the store
                await runner.until(lambda: runner.acked >= 3)
                await runner.until(lambda: bool(runner.of_type(p.Kill)))
                assert [(k.job_id, k.attempt) for k in runner.of_type(p.Kill)] == [(99, 1)]
                done = await job_now(core, first.id)
                assert done.state is JobState.COMPLETED
                lost = await job_now(core, second.id)
                assert lost.state is JobState.LOST
                assert "no record" in (lost.reason or "")
                await eventually(lambda: not core.reaps)  # the stray attempt was killed

    run(main)
