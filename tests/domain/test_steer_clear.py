"""A job that ran out its `--max-runtime` on a borrowed node: the next attempt avoids
that node while another node could hold it, and goes back there only when none could."""

from __future__ import annotations

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from nvq.domain.reassign import steer_clear

GIB = 1024


def node(name: str, card_gib: int, *, accepting: bool = True) -> NodeSlot:
    gpus = [GpuSlot(index=0, total_mb=card_gib * GIB, foreign_mb=0, queue_mb=0)]
    return NodeSlot(name=name, accepting=accepting, gpus=gpus, cpu_jobs=0, running_jobs=0)


def job(vram_gib: int, **kw: object) -> PendingJob:
    return PendingJob(id=1, priority=0, created_at=1.0, gpus=1, vram_mb=vram_gib * GIB, **kw)  # type: ignore[arg-type]


def steer(j: PendingJob, slots: list[NodeSlot]) -> PendingJob:
    return steer_clear(j, "desk", slots, headroom_mb=0, max_cpu_jobs=4)


def test_the_next_attempt_goes_to_another_node_that_can_hold_it() -> None:
    slots = [node("desk", 24), node("lab", 24)]
    steered = steer(job(20), slots)
    assert steered.nodes == ("lab",)
    (placed,) = place(slots, [steered], headroom_mb=0, max_cpu_jobs=4).placements
    assert placed.node == "lab"


def test_it_waits_for_room_on_the_other_node_rather_than_return() -> None:
    full = GpuSlot(index=0, total_mb=24 * GIB, foreign_mb=0, queue_mb=20 * GIB)
    lab = NodeSlot(name="lab", accepting=True, gpus=[full], cpu_jobs=0, running_jobs=1)
    slots = [node("desk", 24), lab]
    steered = steer(job(20), slots)
    assert steered.nodes == ("lab",)
    result = place(slots, [steered], headroom_mb=0, max_cpu_jobs=4)
    assert result.placements == [] and result.unschedulable == []


def test_a_node_that_takes_no_jobs_now_is_not_waited_for() -> None:
    # lab is drained or down: back to desk rather than wait for a person.
    slots = [node("desk", 24), node("lab", 24, accepting=False)]
    j = job(20)
    assert steer(j, slots) is j


def test_back_to_the_same_node_when_no_other_could_ever_hold_it() -> None:
    slots = [node("desk", 48), node("lab", 24)]
    big = job(40)
    assert steer(big, slots) is big
    assert steer(job(20, node="desk"), slots).nodes is None  # pinned there: nowhere else
    assert steer(job(20), [node("desk", 24)]).nodes is None  # the only node


def test_an_in_place_job_keeps_to_the_nodes_that_see_its_directory() -> None:
    slots = [node("desk", 24), node("lab", 24), node("far", 24)]
    assert steer(job(20, nodes=("desk", "lab")), slots).nodes == ("lab",)
