"""Every waiting job says why, in-process: `job ls` and `job show` replies carry the
reason the last placement pass supports, and `job why` checks each node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from nvq import control as c
from nvq.daemon.core.state import State
from nvq.daemon.handlers.jobs import list_jobs, show
from nvq.daemon.handlers.policy import pause
from nvq.daemon.handlers.queue import node_flag
from nvq.daemon.handlers.why import why
from nvq.model import Job, JobRecord, JobState
from tests.fakes.aio import run
from tests.fakes.daemon import _contexts, eventually, running_daemon, submit
from tests.fakes.runner import FakeRunner

GIB = 1024


async def listed(core: State) -> dict[int, Any]:
    jobs = await list_jobs(_contexts[id(core)], c.ListJobs(), "tester")
    return {j.id: j for j in jobs}


async def reason(core: State, job: Job | JobRecord) -> tuple[str | None, str | None]:
    row = (await listed(core))[job.id]
    return row.reason, getattr(row, "reason_detail", None)


async def settled(core: State, job: Job | JobRecord, code: str) -> str:
    """Wait for a placement pass that gives `job` the reason `code`; its words."""
    with anyio.fail_after(60):  # only a hung test: a loaded machine is slow
        while True:
            got, detail = await reason(core, job)
            if got == code:
                return str(detail)
            await anyio.sleep(0.02)


def test_resources_dependency_and_the_best_candidate(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            big = await submit(core, "sleep 100", gpus=2, vram_mb=20 * GIB)
            await runner.until(lambda: (big.id, 1) in runner.active)
            waits = await submit(core, "train", vram_mb=20 * GIB)
            detail = await settled(core, waits, "Resources")
            assert detail == "best candidate: local:0 (24GiB) has 3.5GiB free, needs 20GiB (queue jobs hold 20GiB)"
            after = await submit(core, "eval", gpus=0, after=[big.id])
            detail = await settled(core, after, "Dependency")
            assert detail == f"waits for job {big.id} (running) to complete"
            running = (await listed(core))[big.id]
            assert running.reason is None and not hasattr(running, "reason_detail")
            report = await why(_contexts[id(core)], c.Why(id=waits.id), "tester")
            assert (report.reason, report.state) == ("Resources", "pending")
            (node,) = report.nodes
            assert node.node == "local" and not node.fits
            assert {k.constraint: k.detail for k in node.checks if not k.ok} == {
                "memory per card": "local:0 (24GiB) has 3.5GiB free, needs 20GiB (queue jobs hold 20GiB)"
            }

    run(main)


def test_array_limit_pause_and_a_drained_pin(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            ctx = _contexts[id(core)]
            first = await submit(core, "step", gpus=0, array="0-2%1")
            await runner.until(lambda: (first.id, 1) in runner.active)
            members = sorted(j.id for j in core.jobs.values() if j.array_id == first.id)
            detail = await settled(core, core.jobs[members[1]], "ArrayLimit")
            assert detail == f"array {first.id}: 1 of at most 1 running"
            (paused,) = await pause(ctx, c.Pause(ids=[members[2]]), "tester")
            assert await reason(core, paused) == ("Paused", "paused by tester")
            await node_flag(ctx, c.NodeFlag(node="local", flag="drained", value=True), "tester")
            pinned = await submit(core, "pinned", node="local")
            detail = await settled(core, pinned, "NodeDrained")
            assert detail == "local: drained: it takes no new jobs"
            doc = await show(ctx, c.ShowJob(id=pinned.id), "tester")
            assert (doc.reason, doc.reason_detail) == ("NodeDrained", detail)

    run(main)


def test_a_held_job_names_the_prerequisite(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            bad = await submit(core, "false", gpus=0)
            await runner.until(lambda: (bad.id, 1) in runner.active)
            held = await submit(core, "next", gpus=0, after=[bad.id])
            runner.exit(bad.id, 1)
            await eventually(lambda: core.jobs[held.id].state is JobState.HELD)
            code, detail = await reason(core, core.jobs[held.id])
            assert code == "Held"
            assert detail == (
                f"prerequisite {bad.id} ended failed; `nvq job release {held.id}` runs it anyway"
            )

    run(main)
