"""Placement on Slurm pilots: a job goes to a pilot only if its time limit plus the
margin fits in the allocation's time left; untimed jobs only where allowed."""

from __future__ import annotations

from typing import Any

from nvq.domain.placement import PendingJob, PlacementResult
from tests.domain.test_placement import gpu_node, job, placed, run

PILOT: dict[str, Any] = {"time_left": 3600.0, "untimed_ok": False, "time_margin": 300.0}


def where(result: PlacementResult) -> dict[int, str]:
    return {p.job_id: p.node for p in result.placements}


def timed(i: int, limit: float | None, **kw: Any) -> PendingJob:
    return job(i, time_limit=limit, **kw)


def test_a_job_that_fits_the_time_left_goes_to_the_pilot() -> None:
    result = run([gpu_node("hpc/1", **PILOT)], [timed(1, 3300.0)])
    assert placed(result) == {1: ("hpc/1", [0])}


def test_a_job_longer_than_the_time_left_waits_and_is_not_unschedulable() -> None:
    result = run([gpu_node("hpc/1", **PILOT)], [timed(1, 3301.0)])
    assert placed(result) == {}
    assert result.unschedulable == []


def test_a_longer_job_goes_to_a_node_without_an_end() -> None:
    nodes = [gpu_node("hpc/1", **PILOT), gpu_node("lab", running=1)]
    result = run(nodes, [timed(1, 7200.0), timed(2, 600.0)])
    assert where(result) == {1: "lab", 2: "hpc/1"}


def test_untimed_jobs_only_where_allowed_and_not_at_the_end() -> None:
    assert placed(run([gpu_node("hpc/1", **PILOT)], [timed(1, None)])) == {}
    allowed = {**PILOT, "untimed_ok": True}
    assert placed(run([gpu_node("hpc/1", **allowed)], [timed(1, None)])) == {1: ("hpc/1", [0])}
    ending = {**allowed, "time_left": 300.0}
    assert placed(run([gpu_node("hpc/1", **ending)], [timed(1, None)])) == {}


def test_time_limits_do_not_matter_on_ordinary_nodes() -> None:
    result = run([gpu_node("lab")], [timed(1, None), timed(2, 10 * 86400.0)])
    assert where(result) == {1: "lab", 2: "lab"}
