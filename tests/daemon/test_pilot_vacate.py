"""A pilot whose untimed jobs were told to leave stays closed to them until it ends:
squeue's time left is taken a moment before it is read, so a later report can put the
pilot back over `vacate_before`, and placement would send the job straight back (seen
at -n 8: the job then waited there for an allocation about to end)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nvq.clusters.slurm import PilotStatus
from nvq.daemon.machines.pilots import DaemonPilots
from nvq.domain.placement import NodeSlot, time_fits
from tests.fakes.aio import run
from tests.fakes.daemon import running_daemon

CONFIG = """[queue]
local_node = false

[[clusters]]
name = "hpc"
host = "login.invalid"
time = "2m"
vacate_before = "110s"
allow_untimed = true
"""


def _slot(fields: dict[str, Any]) -> NodeSlot:
    return NodeSlot("hpc/1", True, [], 0, 0, **fields)


def test_a_vacated_pilot_stays_closed_to_untimed_jobs(tmp_path: Path) -> None:
    async def main() -> None:
        async with running_daemon(tmp_path, {}, CONFIG) as state:
            pilots = DaemonPilots(state)
            status = PilotStatus("1", "RUNNING", None, 112.0, "c1")
            pilots.status["hpc/1"] = (status, time.time())
            assert time_fits(_slot(pilots.slot_fields("hpc/1")), None)  # 112 s > 110 s
            pilots.vacated.add("hpc/1")  # what the vacate loop does once ≤ 110 s is seen
            fields = pilots.slot_fields("hpc/1")
            assert fields["time_left"] <= 110.0
            assert not time_fits(_slot(fields), None)
            assert not time_fits(_slot(fields), 60.0)  # nor a job with a limit
            await pilots.pilot_ended("hpc/1", "ended")
            assert "hpc/1" not in pilots.vacated

    run(main)


def test_an_ending_pilot_takes_no_job(tmp_path: Path) -> None:
    """`pilot_ended` drops the pilot's status before it takes the lock, and its node
    only at the end: a placement pass in between must find nothing fits there (seen
    at -n 8: an untimed job sent to a pilot as it was released, then left running on
    a node that no longer existed)."""

    async def main() -> None:
        async with running_daemon(tmp_path, {}, CONFIG) as state:
            pilots = DaemonPilots(state)
            pilots.status["hpc/1"] = (PilotStatus("1", "RUNNING", None, 115.0, "c1"), time.time())
            assert time_fits(_slot(pilots.slot_fields("hpc/1")), None)
            del pilots.status["hpc/1"]  # what pilot_ended does first
            fields = pilots.slot_fields("hpc/1")
            assert not time_fits(_slot(fields), None)
            assert not time_fits(_slot(fields), 5.0)
            assert pilots.slot_fields("n0") == {}  # not a pilot: no end

    run(main)
