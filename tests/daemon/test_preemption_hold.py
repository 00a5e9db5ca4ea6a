"""Preemption in process: while its victims stop, in whatever order their exits come,
the node is kept for the urgent job — a lower-priority job that fits the first card
freed does not take it — and the urgent job says `Preempting` meanwhile."""

from __future__ import annotations

from pathlib import Path

from nvq.daemon.placement.explain import waiting_of
from nvq.model import JobState
from nvq_runner import protocol as p
from tests.fakes.aio import run
from tests.fakes.daemon import _contexts, eventually, job_now, memory_of, running_daemon, submit
from tests.fakes.runner import GIB_MB, FakeRunner


class SlowToStop(FakeRunner):
    """Records a Kill without ending the job: the test says when each one exits."""

    def _dispatch(self, msg: p.DaemonMsg) -> None:
        if isinstance(msg, p.Kill):
            self.received.append(msg)
            return
        super()._dispatch(msg)


def test_the_node_waits_for_the_urgent_job_whichever_victim_stops_first(tmp_path: Path) -> None:
    async def main() -> None:
        runner = SlowToStop()
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            await eventually(lambda: core.nodes["local"].reconciled)
            big = 20 * GIB_MB
            a = await submit(core, gpus=1, vram_mb=big, preemptible=True)
            b = await submit(core, gpus=1, vram_mb=big, preemptible=True)
            await eventually(
                lambda: all(core.jobs[j.id].state is JobState.RUNNING for j in (a, b))
            )
            urgent = await submit(core, gpus=2, vram_mb=20 * GIB_MB, priority=5)
            memory = memory_of(core)
            await eventually(lambda: urgent.id in memory.preempt_holds)
            assert memory.preempt_holds[urgent.id].victims == {a.id, b.id}
            # A job of the victims' own priority that one freed card would hold.
            small = await submit(core, gpus=1, vram_mb=big)
            await eventually(lambda: memory.pass_facts is not None and bool(memory.pass_facts.holds))
            assert memory.pass_facts is not None and urgent.id in memory.pass_facts.holds
            ctx = _contexts[id(core)]
            why = waiting_of(core, memory, ctx.machines, core.jobs[urgent.id])
            assert why is not None and why.reason == "Preempting", why
            assert why.detail == (
                f"preempting jobs {a.id}, {b.id} on local: it starts there once they stopped"
            )

            before = memory.pass_facts.number
            runner.exit(b.id, 143, reason="killed")  # the later one's exit comes first
            await eventually(lambda: not any(k[0] == b.id for k in core.reaps))
            # A pass after that exit (its own kick) still left both waiting.
            await eventually(lambda: memory.pass_facts is not None and memory.pass_facts.number > before)
            assert core.jobs[small.id].state is JobState.PENDING
            assert core.jobs[urgent.id].state is JobState.PENDING

            runner.exit(a.id, 143, reason="killed")
            await eventually(lambda: core.jobs[urgent.id].state is JobState.RUNNING)
            assert sorted(core.jobs[urgent.id].gpus) == [0, 1]
            assert core.jobs[small.id].state is JobState.PENDING
            for victim in (a, b):
                done = await job_now(core, victim.id)
                assert (done.state, done.retried) == (JobState.PENDING, 0)

    run(main)


def test_a_restarted_daemon_keeps_the_hold_of_victims_still_stopping(tmp_path: Path) -> None:
    async def main() -> None:
        runner = SlowToStop()
        big = 20 * GIB_MB
        async with runner:
            async with running_daemon(tmp_path, {"local": runner}) as core:
                await eventually(lambda: core.nodes["local"].reconciled)
                a = await submit(core, gpus=1, vram_mb=big, preemptible=True)
                b = await submit(core, gpus=1, vram_mb=big, preemptible=True)
                await eventually(
                    lambda: all(core.jobs[j.id].state is JobState.RUNNING for j in (a, b))
                )
                urgent = await submit(core, gpus=2, vram_mb=big, priority=5)
                await eventually(lambda: urgent.id in memory_of(core).preempt_holds)
            async with running_daemon(tmp_path, {"local": runner}) as again:
                await eventually(lambda: again.nodes["local"].reconciled)
                await eventually(lambda: urgent.id in memory_of(again).preempt_holds)
                hold = memory_of(again).preempt_holds[urgent.id]
                assert (hold.node, hold.victims) == ("local", frozenset({a.id, b.id}))
                runner.exit(a.id, 143, reason="killed")
                runner.exit(b.id, 143, reason="killed")
                await eventually(lambda: again.jobs[urgent.id].state is JobState.RUNNING)

    run(main)
