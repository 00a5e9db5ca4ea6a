"""Reservations in process: a `--reservation` job starts when its window opens, on the
placement loop's own timer (no node event needed), and only the users a reservation
lists may submit into it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nvq.daemon.core.errors import BadRequest
from nvq.daemon.placement import reserving
from nvq.domain.reservations import CardReservation
from nvq.model import JobState
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, job_now, memory_of, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_a_reservation_job_starts_when_the_window_opens(tmp_path: Path) -> None:
    async def main() -> None:
        runner = FakeRunner()
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            await eventually(lambda: core.nodes["local"].reconciled)
            await eventually(lambda: memory_of(core).pass_facts is not None)
            start = time.time() + 1.0
            booked = CardReservation(
                name="soon", cards=["local:1"], start=start, end=start + 3600, users=["tester"]
            )
            await reserving.add(core, booked, "tester")
            job = await submit(core, gpus=1, reservation="soon")
            # Nothing else happens on this queue: only the timer can start it.
            await eventually(lambda: core.jobs[job.id].state is JobState.RUNNING)
            started = await job_now(core, job.id)
            assert started.dispatched_at is not None and started.dispatched_at >= start
            assert started.gpus == [1]

            theirs = CardReservation(
                name="theirs", cards=["local:0"], start=0.0, end=start + 60, users=["alice"]
            )
            await reserving.add(core, theirs, "tester")
            with pytest.raises(BadRequest, match="theirs is for alice, not tester"):
                await submit(core, gpus=1, reservation="theirs")

    run(main)

