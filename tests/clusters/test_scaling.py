"""When pilots are requested and released, and which jobs fit a pilot's time."""

from __future__ import annotations

import pytest

from nvq.clusters.config import ClusterConfig
from nvq.clusters.scaling import (
    PilotView,
    ScaleDecision,
    WaitingJob,
    decide,
    fits_shape,
    fits_walltime,
    next_pass_in,
    pilots_needed,
    vacate_due,
)

NOW = 10_000.0
HPC = ClusterConfig(
    name="hpc",
    host="login",
    gpus_per_pilot=4,
    time=8 * 3600.0,
    memory_mb=65536,
    max_pilots=3,
    scale_after=30.0,
    idle_release=600.0,
    vacate_before=300.0,
)


def job(
    i: int,
    gpus: int = 1,
    waited: float = 60.0,
    timeout: float | None = 3600.0,
    memory_mb: int | None = None,
) -> WaitingJob:
    return WaitingJob(
        id=i, gpus=gpus, timeout=timeout, memory_mb=memory_mb, waiting_since=NOW - waited
    )


def running(job_id: str, idle_for: float | None = None, left: float = 7200.0) -> PilotView:
    idle_since = None if idle_for is None else NOW - idle_for
    return PilotView(job_id=job_id, phase="running", time_left=left, idle_since=idle_since)


def pending(job_id: str) -> PilotView:
    return PilotView(job_id=job_id, phase="requested", time_left=HPC.time)


# ------------------------------------------------------------------ walltime


@pytest.mark.parametrize(
    ("timeout", "left", "untimed_ok", "fits"),
    [
        (3600.0, 3900.0, False, True),  # exactly the job plus vacate_before
        (3600.0, 3899.0, False, False),
        (3600.0, None, False, True),  # an allocation without an end
        (None, 10 * 3600.0, False, False),  # untimed needs allow_untimed
        (None, 10 * 3600.0, True, True),
        (None, None, True, True),
        (None, None, False, False),
        (None, 301.0, True, True),
        (None, 300.0, True, False),  # it would be vacated at once
    ],
)
def test_fits_walltime(
    timeout: float | None, left: float | None, untimed_ok: bool, fits: bool
) -> None:
    cluster = ClusterConfig(name="hpc", host="h", allow_untimed=untimed_ok)
    assert fits_walltime(timeout, left, cluster) is fits


def test_vacate_due_before_the_allocation_ends() -> None:
    assert not vacate_due(301.0, HPC)
    assert vacate_due(300.0, HPC)
    assert vacate_due(0.0, HPC)
    assert not vacate_due(None, HPC)


def test_fits_shape() -> None:
    assert fits_shape(job(1, gpus=4), HPC)
    assert not fits_shape(job(1, gpus=5), HPC)
    assert not fits_shape(job(1, memory_mb=65537), HPC)
    assert fits_shape(job(1, memory_mb=65536), HPC)
    assert not fits_shape(job(1, timeout=8 * 3600.0), HPC)  # no room for vacate_before
    assert not fits_shape(job(1, timeout=None), HPC)
    cpu_only = ClusterConfig(name="hpc", host="h", gpus_per_pilot=0)
    assert fits_shape(job(1, gpus=0), cpu_only)
    assert not fits_shape(job(1, gpus=1), cpu_only)


def test_pilots_needed_packs_cards() -> None:
    assert pilots_needed([], HPC) == 0
    assert pilots_needed([job(i) for i in range(4)], HPC) == 1
    assert pilots_needed([job(i) for i in range(5)], HPC) == 2
    assert pilots_needed([job(1, 3), job(2, 3), job(3, 1), job(4, 1)], HPC) == 2
    assert pilots_needed([job(1, 2), job(2, 0), job(3, 0)], HPC) == 1
    assert pilots_needed([job(i, 0) for i in range(5)], HPC, cpu_jobs_per_pilot=4) == 2


# ------------------------------------------------------------------ decide


def test_no_jobs_no_pilots() -> None:
    assert decide([], [], HPC, NOW) == ScaleDecision(request=0, release=[], demand=0)


def test_jobs_that_waited_scale_after_request_a_pilot() -> None:
    assert decide([], [job(1, waited=29.9)], HPC, NOW).request == 0
    assert decide([], [job(1, waited=30.0)], HPC, NOW) == ScaleDecision(1, [], 1)


def test_jobs_no_pilot_could_take_request_nothing() -> None:
    waiting = [job(1, gpus=8), job(2, timeout=None), job(3, timeout=9 * 3600.0)]
    assert decide([], waiting, HPC, NOW) == ScaleDecision(0, [], 0)


def test_pending_pilots_absorb_demand() -> None:
    waiting = [job(i) for i in range(8)]  # two pilots' worth
    assert decide([pending("1")], waiting, HPC, NOW).request == 1
    assert decide([pending("1"), pending("2")], waiting, HPC, NOW) == ScaleDecision(0, [], 2)


def test_pending_pilots_nobody_needs_are_cancelled_newest_first() -> None:
    pilots = [pending("9"), pending("10"), running("8")]
    assert decide(pilots, [job(1)], HPC, NOW) == ScaleDecision(0, ["10"], 1)
    assert decide(pilots, [], HPC, NOW).release == ["10", "9"]
    keep_two = ClusterConfig(name="hpc", host="h", min_pilots=2, max_pilots=3)
    assert decide(pilots, [], keep_two, NOW).release == ["10"]


def test_running_pilots_are_not_counted_against_demand() -> None:
    # The waiting jobs are those no existing node can take, running pilots included.
    assert decide([running("1")], [job(1)], HPC, NOW).request == 1


def test_max_pilots_caps_requests() -> None:
    waiting = [job(i, gpus=4) for i in range(10)]
    assert decide([], waiting, HPC, NOW) == ScaleDecision(3, [], 10)
    assert decide([running("1"), pending("2")], waiting, HPC, NOW).request == 1
    ending = PilotView(job_id="3", phase="ending")
    assert decide([running("1"), pending("2"), ending], waiting, HPC, NOW).request == 1


def test_min_pilots_are_requested_and_kept() -> None:
    keep_one = ClusterConfig(name="hpc", host="h", min_pilots=1, max_pilots=2)
    assert decide([], [], keep_one, NOW).request == 1
    idle = [running("1", idle_for=3600.0), running("2", idle_for=3600.0)]
    assert decide(idle, [], keep_one, NOW).release == ["1"]


def test_idle_pilots_are_released_after_idle_release() -> None:
    assert decide([running("1", idle_for=599.0)], [], HPC, NOW).release == []
    assert decide([running("1", idle_for=600.0)], [], HPC, NOW).release == ["1"]
    assert decide([running("1", idle_for=None)], [], HPC, NOW).release == []
    both = [running("1", idle_for=700.0), running("2", idle_for=900.0)]
    assert decide(both, [], HPC, NOW).release == ["2", "1"]  # longest idle first


def test_an_idle_pilot_too_short_for_the_waiting_job_is_replaced() -> None:
    short = running("1", idle_for=600.0, left=1000.0)
    assert decide([short], [job(1, timeout=3600.0)], HPC, NOW) == ScaleDecision(1, ["1"], 1)


def test_refused_submission_blocks_requests_but_not_releases() -> None:
    # The idle pilot is too short for the job: it goes, and no new one is asked for.
    d = decide([running("1", idle_for=600.0, left=1000.0)], [job(1)], HPC, NOW, blocked=True)
    assert d == ScaleDecision(0, ["1"], 1)


def test_manual_target() -> None:
    assert decide([], [], HPC, NOW, target=2).request == 2
    assert decide([], [], HPC, NOW, target=5).request == 3  # still within max_pilots
    pilots = [running("1", idle_for=1.0), running("2"), pending("3")]
    # Pilot 1 sits idle with room: job 1 goes there, it needs no new pilot.
    assert decide(pilots, [job(1)], HPC, NOW, target=2) == ScaleDecision(0, ["3"], 0)
    assert decide(pilots, [job(1)], HPC, NOW, target=1) == ScaleDecision(0, ["3", "1"], 0)


def test_drain_releases_idle_and_pending_pilots_at_once_and_keeps_busy_ones() -> None:
    pilots = [running("1", idle_for=0.0), running("2"), pending("3")]
    assert decide(pilots, [job(1)], HPC, NOW, target=0) == ScaleDecision(0, ["3", "1"], 0)


def test_a_pilot_that_just_started_takes_the_waiting_job_and_no_spare_is_requested() -> None:
    # The pass that sees the pilot running still sees its job waiting (placement has
    # not run yet): it must not ask for a second pilot for the same job.
    started = running("1", idle_for=0.0)
    assert decide([started], [job(1)], HPC, NOW) == ScaleDecision(0, [], 0)
    # Four cards: two 2-card jobs fit it, a third asks for one more pilot.
    two = [job(i, gpus=2) for i in range(3)]
    assert decide([started], two, HPC, NOW) == ScaleDecision(1, [], 1)


def test_an_idle_pilot_about_to_take_a_job_is_not_released() -> None:
    long_idle = running("1", idle_for=3600.0)
    assert decide([long_idle], [job(1)], HPC, NOW) == ScaleDecision(0, [], 0)
    assert decide([long_idle], [], HPC, NOW).release == ["1"]


def test_a_job_within_scale_after_asks_for_nothing() -> None:
    assert decide([], [job(1, waited=29.0)], HPC, NOW) == ScaleDecision(0, [], 0)
    assert decide([], [job(1, waited=30.0)], HPC, NOW) == ScaleDecision(1, [], 1)


def starting(job_id: str, left: float = 7200.0) -> PilotView:
    return PilotView(job_id=job_id, phase="running", starting=True, time_left=left)


def test_a_pilot_whose_runner_has_not_answered_is_capacity_already() -> None:
    # The pass that sees the allocation granted still sees its job waiting (the
    # runner is being set up): the allocation counts, no spare sbatch.
    assert decide([starting("1")], [job(1)], HPC, NOW) == ScaleDecision(0, [], 0)
    # It takes as many jobs as it has cards; beyond that another pilot is asked for.
    five = [job(i) for i in range(5)]
    assert decide([starting("1")], five, HPC, NOW) == ScaleDecision(1, [], 1)
    # A job too long for its time left still needs a pilot of its own.
    assert decide([starting("1", left=600.0)], [job(1)], HPC, NOW).request == 1


def test_a_starting_pilot_is_not_released_as_idle() -> None:
    assert decide([starting("1")], [], HPC, NOW + 10 * HPC.idle_release).release == []


def test_the_next_pass_comes_when_something_is_due() -> None:
    # Nothing due: the poll. A job reaching scale_after, an idle pilot reaching
    # idle_release, or the end of a hold after a failed start bring it forward.
    assert next_pass_in(HPC, NOW, [], [], 0.0, 10.0, 1.0) == 10.0
    assert next_pass_in(HPC, NOW, [job(1, waited=27.0)], [], 0.0, 10.0, 1.0) == 3.0
    assert next_pass_in(HPC, NOW, [], [NOW - 595.0], 0.0, 10.0, 1.0) == 5.0
    assert next_pass_in(HPC, NOW, [], [], NOW + 4.0, 10.0, 1.0) == 4.0
