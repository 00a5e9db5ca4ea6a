"""Why a job waits, per node and in one word: every constraint the analysis knows,
each passing and failing, and the reason `job ls` shows for each situation."""

from __future__ import annotations

from typing import Any

import pytest

from nvq.domain import waiting as w
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob

GIB = 1024
HEADROOM = 512


def job(**kw: object) -> PendingJob:
    base: dict[str, object] = {"id": 1, "priority": 0, "created_at": 0.0, "gpus": 1, "vram_mb": 0}
    base.update(kw)
    return PendingJob(**base)  # type: ignore[arg-type]


def slot(name: str = "gpu1", free_gib: tuple[float, ...] = (24, 24), **kw: object) -> NodeSlot:
    """Cards of 24.5 GiB whose free memory after headroom is `free_gib`."""
    total = 24 * GIB + HEADROOM
    gpus = [
        GpuSlot(index=i, total_mb=total, foreign_mb=0, queue_mb=int((24 - f) * GIB))
        for i, f in enumerate(free_gib)
    ]
    base: dict[str, object] = {
        "name": name,
        "accepting": True,
        "gpus": gpus,
        "cpu_jobs": 0,
        "running_jobs": 0,
    }
    base.update(kw)
    return NodeSlot(**base)  # type: ignore[arg-type]


def facts(s: NodeSlot | None = None, *, name: str = "gpu1", **kw: object) -> w.NodeFacts:
    return w.NodeFacts(name=s.name if s else name, state=str(kw.pop("state", "up")), slot=s, **kw)  # type: ignore[arg-type]


def fit(j: PendingJob, f: w.NodeFacts, lane_block: str | None = None) -> w.NodeFit:
    return w.analyze(j, f, headroom_mb=HEADROOM, max_cpu_jobs=2, lane_block=lane_block)


def failing(result: w.NodeFit) -> dict[str, str]:
    return {c.constraint: c.detail for c in result.checks if not c.ok}


def test_a_job_that_fits_passes_every_check() -> None:
    result = fit(job(vram_mb=20 * GIB), facts(slot()))
    assert result.fits and failing(result) == {}
    assert [c.constraint for c in result.checks] == ["state", "cards", "memory per card"]


def test_memory_per_card_names_the_best_card_with_numbers() -> None:
    result = fit(job(vram_mb=20 * GIB), facts(slot("gpu2", (10, 18.5))))
    assert failing(result) == {"memory per card": "gpu2:1 (24.5GiB) has 18.5GiB free, needs 20GiB (queue jobs hold 5.5GiB)"}
    assert result.best_free_mb == int(18.5 * GIB)


def test_several_cards_count_the_ones_with_room() -> None:
    result = fit(job(gpus=2, vram_mb=20 * GIB), facts(slot(free_gib=(24, 10, 5))))
    assert failing(result) == {"memory per card": "1 of 3 GPUs have 20GiB free, needs 2"}


def test_too_few_cards() -> None:
    result = fit(job(gpus=4), facts(slot()))
    assert failing(result) == {"cards": "has 2 schedulable GPUs, needs 4"}


def test_unschedulable_cards_do_not_count() -> None:
    s = slot()
    s = NodeSlot(
        **{
            **{f: getattr(s, f) for f in s.__struct_fields__},
            "gpus": [
                GpuSlot(index=0, total_mb=25 * GIB, foreign_mb=0, queue_mb=0, schedulable=False),
                s.gpus[1],
            ],
        }
    )
    assert failing(fit(job(gpus=2), facts(s))) == {"cards": "has 1 schedulable GPU, needs 2"}


def test_pin_to_another_node_is_the_only_check() -> None:
    result = fit(job(node="gpu2"), facts(slot("gpu1")))
    assert [(c.constraint, c.ok) for c in result.checks] == [("pin", False)]
    assert fit(job(node="gpu"), facts(slot("gpu1"))).checks[0] == w.Check(
        "pin", True, "matches gpu1"
    )


@pytest.mark.parametrize(
    ("kw", "constraint", "detail"),
    [
        ({"state": "down"}, "state", "node is down"),
        ({"state": "connecting"}, "state", "node is connecting"),
        ({"state": "stopped"}, "state", "node is stopped (`nvq node start gpu1`)"),
        ({"state": "ignored"}, "state", "node is ignored (`nvq queue unignore gpu1`)"),
        ({"drained": True}, "drained", "drained: it takes no new jobs"),
        ({"fenced": True}, "fenced", "a pending kill: an old attempt may still hold its cards"),
    ],
)
def test_node_states(kw: dict[str, Any], constraint: str, detail: str) -> None:
    assert failing(fit(job(), facts(slot(), **kw))) == {constraint: detail}


def test_a_node_that_never_reported_has_no_cards_yet() -> None:
    result = fit(job(), facts(None, state="connecting"))
    assert failing(result) == {
        "state": "node is connecting",
        "cards": "it has not reported its cards yet",
    }


def test_busy_node_takes_only_its_owners_jobs() -> None:
    busy = slot(busy=True, owner="ann")
    assert failing(fit(job(user="bob"), facts(busy))) == {
        "busy": "ann is using it: only ann's own jobs go there"
    }
    assert fit(job(user="ann"), facts(busy)).fits
    assert not fit(job(user="ann", forbid_busy=True), facts(busy)).fits


def test_cuda_known_unknown_and_new_enough() -> None:
    old = slot(cuda=(12, 2))
    assert failing(fit(job(cuda=(13, 0)), facts(old))) == {
        "cuda": "driver supports CUDA 12.2, needs >= 13.0"
    }
    assert fit(job(cuda=(12, 0)), facts(old)).fits
    assert failing(fit(job(cuda=(13, 0)), facts(slot()))) == {
        "cuda": "driver CUDA unknown, needs >= 13.0"
    }


def test_host_memory() -> None:
    s = slot(memory_free_mb=12 * GIB)
    assert failing(fit(job(memory_mb=16 * GIB), facts(s))) == {
        "host memory": "12GiB free, needs 16GiB"
    }
    assert fit(job(memory_mb=8 * GIB), facts(s)).fits


def test_cpu_jobs_use_cpu_slots() -> None:
    assert fit(job(gpus=0), facts(slot(cpu_jobs=1))).fits
    assert failing(fit(job(gpus=0), facts(slot(cpu_jobs=2)))) == {
        "cpu slots": "runs 2 CPU-only jobs, at most 2"
    }


def test_lane_jobs_check_their_own_card_and_the_lane() -> None:
    lane_job = job(node="gpu1", gpu=1, vram_mb=20 * GIB)
    assert failing(fit(lane_job, facts(slot(free_gib=(24, 4))))) == {
        "memory per card": "gpu1:1 has 4GiB free, needs 20GiB"
    }
    assert failing(fit(job(node="gpu1", gpu=5), facts(slot()))) == {
        "cards": "gpu1:5 is not a schedulable GPU"
    }
    assert failing(fit(lane_job, facts(slot()), "job 3 runs on the lane now")) == {
        "lane": "job 3 runs on the lane now"
    }
    assert fit(lane_job, facts(slot("gpu10"))).checks[0].ok is False  # exact name


# -------------------------------------------------------------- one reason


def reason(
    j: PendingJob, *nodes: w.NodeFacts, reserved: tuple[int, str] | None = None
) -> w.Waiting:
    return w.summarize(j, [fit(j, n) for n in nodes], reserved_for=reserved)


def test_fits_somewhere_means_jobs_ahead_go_first() -> None:
    got = reason(job(), facts(slot("gpu1")), facts(slot("gpu2")))
    assert got == w.Waiting("Priority", "fits on gpu1, gpu2; jobs ahead of it are placed first")


def test_a_reservation_for_another_job_on_the_only_fitting_node() -> None:
    got = reason(job(id=5), facts(slot("gpu1")), reserved=(2, "gpu1"))
    assert got == w.Waiting("Starvation", "starvation reservation for job 2 on node gpu1")
    assert reason(job(id=2), facts(slot("gpu1")), reserved=(2, "gpu1")).reason == "Priority"


def test_resources_names_the_best_candidate() -> None:
    got = reason(
        job(vram_mb=20 * GIB),
        facts(slot("gpu1", (2, 3))),
        facts(slot("gpu2", (10, 18.5))),
        facts(slot("gpu3"), state="down"),
    )
    assert got == w.Waiting(
        "Resources",
        "best candidate: gpu2:1 (24.5GiB) has 18.5GiB free, needs 20GiB (queue jobs hold 5.5GiB)",
    )


def test_the_best_candidate_is_a_card_that_could_ever_hold_the_job() -> None:
    small = NodeSlot("ws1", True, [GpuSlot(0, 24 * GIB, 512, 0)], 0, 0)
    big = NodeSlot("ws2", True, [GpuSlot(0, 80 * GIB, 2 * GIB, 60 * GIB)], 0, 0)
    got = reason(job(vram_mb=70 * GIB), facts(small, name="ws1"), facts(big, name="ws2"))
    assert got == w.Waiting(
        "Resources",
        "best candidate: ws2:0 (80GiB) has 17.5GiB free, needs 70GiB "
        "(queue jobs hold 60GiB, other processes 2GiB)",
    )
    assert failing(fit(job(vram_mb=70 * GIB), facts(small, name="ws1"))) == {
        "memory per card": "no card here can ever hold 70GiB (the largest is 24GiB)"
    }


def test_resources_without_a_memory_candidate_lists_what_fails() -> None:
    got = reason(job(gpus=3), facts(slot("gpu1")), facts(slot("gpu2")))
    assert got.reason == "Resources"
    assert (
        got.detail == "gpu1: has 2 schedulable GPUs, needs 3; gpu2: has 2 schedulable GPUs, needs 3"
    )


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"drained": True}, "NodeDrained"),
        ({"state": "down"}, "NodeDown"),
        ({"state": "connecting"}, "NodeConnecting"),
    ],
)
def test_a_pinned_job_whose_nodes_are_unavailable(kw: dict[str, Any], code: str) -> None:
    got = reason(job(node="gpu2"), facts(slot("gpu1")), facts(slot("gpu2"), **kw))
    assert got.reason == code and got.detail.startswith("gpu2: ")


def test_a_pinned_job_on_a_node_that_never_reported() -> None:
    got = reason(job(node="gpu2"), facts(None, name="gpu2", state="up"))
    assert got == w.Waiting("NodeConnecting", "gpu2: it has not reported its cards yet")


def test_unpinned_jobs_on_down_nodes_wait_for_resources() -> None:
    assert reason(job(), facts(slot(), state="down")).reason == "Resources"


def test_every_node_busy() -> None:
    got = reason(job(user="bob"), facts(slot("gpu1", busy=True, owner="ann")))
    assert got == w.Waiting("Busy", "gpu1: ann is using it: only ann's own jobs go there")


def test_nothing_matches() -> None:
    assert reason(job(node="nope"), facts(slot("gpu1"))) == w.Waiting(
        "Resources", "no node matches its request"
    )


def test_many_nodes_are_summed_up() -> None:
    nodes = [facts(slot(f"gpu{i}"), state="down") for i in range(5)]
    got = reason(job(node="gpu"), *nodes)
    assert got.reason == "NodeDown" and got.detail.endswith("(and 2 more)")


# ------------------------------------------------------------------ Slurm pilots


def pilot(left: float | None, untimed_ok: bool = False) -> NodeSlot:
    return slot("hpc/4", time_left=left, untimed_ok=untimed_ok, time_margin=60.0)


def test_a_pilot_too_short_for_the_job_is_walltime_not_priority() -> None:
    short = fit(job(time_limit=465.0), facts(pilot(488.0)))
    assert not short.fits
    assert failing(short) == {
        "walltime": "hpc/4 has 8m08s left, the job needs 8m45s "
        "(its limit 7m45s + 1m00s to sync before the allocation ends)"
    }
    assert w.summarize(job(time_limit=465.0), [short]) == w.Waiting(
        w.WALLTIME, "hpc/4: " + failing(short)["walltime"]
    )
    assert fit(job(time_limit=400.0), facts(pilot(488.0))).fits


def test_a_job_only_a_pilots_time_left_keeps_out_is_walltime_beside_a_full_node() -> None:
    # The lab's node is full, the pilot has room but too little time: the pilot's
    # walltime is what holds the job, not Resources.
    full = fit(job(time_limit=465.0, vram_mb=20 * GIB), facts(slot("gpu1", (1, 1))))
    short = fit(job(time_limit=465.0, vram_mb=20 * GIB), facts(pilot(488.0)))
    got = w.summarize(job(time_limit=465.0), [full, short])
    assert got == w.Waiting(w.WALLTIME, "hpc/4: " + failing(short)["walltime"])


def test_an_untimed_job_on_pilots_that_take_only_timed_ones_is_untimed() -> None:
    untimed = fit(job(), facts(pilot(3600.0)))
    assert w.summarize(job(), [untimed]) == w.Waiting(
        w.UNTIMED, "pilots take only jobs with --timeout (allow_untimed = false)"
    )
    assert fit(job(), facts(pilot(3600.0, untimed_ok=True))).fits


def test_an_image_job_needs_a_container_runtime() -> None:
    assert failing(fit(job(image=True), facts(slot()))) == {
        "runtime": "has no container runtime (podman, docker, apptainer); the job runs in an image"
    }
    assert fit(job(image=True), facts(slot(runtime="podman"))).fits
    assert fit(job(), facts(slot())).fits
