"""After an outage, in-process (real state and store, fake runners speaking real
frames): an exit the runner recorded wins over what the daemon guessed while the node
was away, and jobs on a node removed from config.toml are settled when the daemon
loads its config."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from nvq.daemon.core.state import State
from nvq.domain import attempts
from nvq.model import Job, JobState
from nvq.store import alerts as alert_table
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

BOTH = nodes_config("a", "b")


@asynccontextmanager
async def node_a(tmp_path: Path) -> AsyncIterator[tuple[FakeRunner, State]]:
    """Node a's runner, and a daemon whose only node is a."""
    async with (
        FakeRunner(hostname="a") as a,
        running_daemon(tmp_path, {"a": a}, nodes_config("a")) as core,
    ):
        yield a, core


@asynccontextmanager
async def runners_a_b() -> AsyncIterator[tuple[FakeRunner, FakeRunner]]:
    """The runners of nodes a and b, for daemons started (and restarted) on them."""
    async with FakeRunner(hostname="a") as a, FakeRunner(hostname="b") as b:
        yield a, b


async def lost_on(a: FakeRunner, core: State) -> Job:
    """A no-reassign job started on a, then a went away: the daemon calls it lost."""
    job = await submit(core, no_reassign=True)
    await a.until(lambda: a.acked == 1)
    a.reachable = False
    await a.drop()
    await eventually(lambda: job.id not in core.jobs)
    return job


def exit_at(
    runner: FakeRunner, job_id: int, attempt: int, code: int, at: float, result: str | None = None
) -> None:
    """The attempt ended at `at` (runner's clock), journaled while nobody listens."""
    del runner.active[(job_id, attempt)]
    runner.record(
        lambda seq: p.JobExited(seq, job_id, attempt, code, None, at, "exit", result=result),
        deliver=False,
    )


async def alert_messages(core: State) -> list[str]:
    found = await core.store.sync(lambda c: alert_table.alerts(c, include_acked=True))
    return [a.message for a in found]


async def history(core: State, job_id: int) -> list[tuple[int, str | None, str | None]]:
    events = await core.store.events(job_id=job_id)
    return [(a.attempt, a.node, a.outcome) for a in attempts.derive(events)]


def test_a_lost_no_reassign_job_takes_the_exit_its_runner_recorded(tmp_path: Path) -> None:
    async def main() -> None:
        async with node_a(tmp_path) as (a, core):
            job = await lost_on(a, core)
            assert (await job_now(core, job.id)).state is JobState.LOST

            exit_at(a, job.id, 1, 0, at=1.0, result='{"acc": 0.9}')
            a.reachable = True
            await a.until(lambda: a.acked == 2)
            done = await job_now(core, job.id)
            assert (done.state, done.exit_code, done.result) == (
                JobState.COMPLETED,
                0,
                {"acc": 0.9},
            )
            assert done.ended_at == 1.0  # the runner's moment, not the daemon's guess
            assert await history(core, job.id) == [(1, "a", "completed")]
            assert not core.reaps

    run(main)


def test_a_lost_job_takes_a_failing_exit_too(tmp_path: Path) -> None:
    async def main() -> None:
        async with node_a(tmp_path) as (a, core):
            job = await lost_on(a, core)
            exit_at(a, job.id, 1, 3, at=1.0)
            a.reachable = True
            await a.until(lambda: a.acked == 2)
            failed = await job_now(core, job.id)
            assert (failed.state, failed.exit_code) == (JobState.FAILED, 3)
            assert failed.reason == "exited with code 3"

    run(main)


def test_an_attempt_that_exited_before_node_down_ends_the_job(tmp_path: Path) -> None:
    async def main() -> None:
        async with runners_a_b() as (a, b):
            b.reachable = False  # until the job runs on a
            async with running_daemon(tmp_path, {"a": a, "b": b}, BOTH) as core:
                job = await submit(core)
                await a.until(lambda: a.acked == 1)
                b.reachable = True
                a.reachable = False
                await a.drop()
                ended = core.jobs[job.id].started_at or 0.0
                # Attempt 1 ends at once, but a is unreachable: nobody hears of it.
                exit_at(a, job.id, 1, 0, at=ended + 0.01, result='{"from": 1}')
                await b.until(lambda: (job.id, 2) in b.active)

                a.reachable = True
                await b.until(lambda: bool(b.of_type(p.Kill)))
                assert [(k.job_id, k.attempt) for k in b.of_type(p.Kill)] == [(job.id, 2)]
                await a.until(lambda: a.acked == 2)
                await b.until(lambda: b.acked == 2)  # attempt 2's exit, from the kill
                done = await job_now(core, job.id)
                assert (done.state, done.node, done.exit_code, done.result) == (
                    JobState.COMPLETED,
                    "a",
                    0,
                    {"from": 1},
                )
                assert done.attempt == 2  # attempt numbers never go back
                assert await history(core, job.id) == [
                    (1, "a", "completed"),
                    (2, "b", "superseded"),
                ]
                events = await core.store.events(job_id=job.id)
                why = next(e for e in events if e.kind == "attempt_superseded").data["reason"]
                assert why == "attempt 1 on a ran to its end first: its outcome stands"
                await eventually(lambda: not core.reaps)
                # Placement goes on: b is not fenced for good.
                after = await submit(core, node="b")
                await b.until(lambda: (after.id, 1) in b.active)

    run(main)


def test_an_attempt_that_ended_after_node_down_still_stands_when_it_ended_first(
    tmp_path: Path,
) -> None:
    """Whether the old attempt ended before or after its node was declared down, it
    ran to its end before the new one: its outcome stands, the new one stops."""

    async def main() -> None:
        async with runners_a_b() as (a, b):
            b.reachable = False
            async with running_daemon(tmp_path, {"a": a, "b": b}, BOTH) as core:
                job = await submit(core)
                await a.until(lambda: a.acked == 1)
                b.reachable = True
                a.reachable = False
                await a.drop()
                await b.until(lambda: (job.id, 2) in b.active)
                exit_at(a, job.id, 1, 0, at=(core.jobs[job.id].dispatched_at or 0.0) + 1)
                a.reachable = True
                await a.until(lambda: a.acked == 2)
                await b.until(lambda: bool(b.of_type(p.Kill)))
                assert [(k.job_id, k.attempt) for k in b.of_type(p.Kill)] == [(job.id, 2)]
                done = await job_now(core, job.id)
                assert (done.state, done.node, done.exit_code) == (JobState.COMPLETED, "a", 0)
                assert "attempt_superseded" in await event_kinds(core, job.id)

    run(main)


def test_jobs_on_a_node_removed_from_config_are_settled_at_load(tmp_path: Path) -> None:
    async def main() -> None:
        async with runners_a_b() as (a, b):
            a.reachable = False  # both jobs go to b
            async with running_daemon(tmp_path, {"a": a, "b": b}, BOTH) as core:
                moves = await submit(core, gpus=0)
                stays = await submit(core, gpus=0, no_reassign=True)
                pinned = await submit(core, gpus=0, node="b")
                await b.until(lambda: b.acked == 3)
            a.reachable = True
            async with running_daemon(tmp_path, {"a": a}, nodes_config("a")) as core:
                lost = await job_now(core, stays.id)
                assert (lost.state, lost.reason) == (
                    JobState.LOST,
                    "lost: node b is no longer in config.toml",
                )
                assert (await job_now(core, pinned.id)).state is JobState.LOST
                await a.until(lambda: (moves.id, 2) in a.active)  # reassigned, runs on a
                assert await history(core, moves.id) == [(1, "b", "reassigned"), (2, "a", None)]
                messages = await alert_messages(core)
                assert (
                    f"job {stays.id} (true) was lost on b: node b is no longer in config.toml"
                    in (messages)
                )
                assert any(f"job {moves.id} (true) was reassigned from b" in m for m in messages)

    run(main)


def test_kills_owed_to_a_removed_node_are_dropped(tmp_path: Path) -> None:
    async def main() -> None:
        async with runners_a_b() as (a, b):
            a.reachable = False
            async with running_daemon(tmp_path, {"a": a, "b": b}, BOTH) as core:
                job = await submit(core)
                await b.until(lambda: b.acked == 1)
                b.reachable = False
                await b.drop()
                await eventually(lambda: core.jobs[job.id].state is JobState.PENDING)
                assert (job.id, 1) in core.reaps  # b owes the old attempt a kill
            a.reachable = True
            async with running_daemon(tmp_path, {"a": a}, nodes_config("a")) as core:
                assert not core.reaps
                assert not await core.store.reaps()
                await a.until(lambda: (job.id, 2) in a.active)

    run(main)


def test_a_lost_no_reassign_job_still_running_when_its_node_returns_runs_on(
    tmp_path: Path,
) -> None:
    # --no-reassign jobs keep running through a partition (the lease fences only
    # reassignable ones): found running when the node returns, the guess `lost` gives
    # way to the fact, and nothing is killed.
    async def main() -> None:
        async with node_a(tmp_path) as (a, core):
            job = await lost_on(a, core)
            a.reachable = True
            await eventually(
                lambda: job.id in core.jobs and core.jobs[job.id].state is JobState.RUNNING
            )
            assert a.of_type(p.Kill) == []
            kinds = [e.kind for e in await core.store.events(job_id=job.id)]
            assert kinds.index("job_lost") < kinds.index("job_found"), kinds

    run(main)
