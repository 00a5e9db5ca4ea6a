"""`--quiet`: only cards with nothing else on them — no queue job, no process the
queue did not start — held whole once placed; and why such a job waits."""

from __future__ import annotations

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from nvq.domain.waiting import NodeFacts, analyze, summarize

GiB = 1024
HEADROOM = 512


def node(*cards: GpuSlot) -> NodeSlot:
    return NodeSlot("n0", True, list(cards), 0, sum(g.queue_jobs for g in cards))


def quiet(id: int, vram: int = 2 * GiB, gpus: int = 1) -> PendingJob:
    return PendingJob(id, 0, float(id), gpus, vram, whole=True, quiet=True)


def placed(slots: list[NodeSlot], jobs: list[PendingJob]) -> dict[int, list[int]]:
    result = place(slots, jobs, headroom_mb=HEADROOM, max_cpu_jobs=4)
    return {p.job_id: p.gpus for p in result.placements}


FOREIGN = GpuSlot(0, 24 * GiB, 1 * GiB, 0, foreign_util=95)
IDLE_FOREIGN = GpuSlot(1, 24 * GiB, 8 * GiB, 0)  # a process holding memory, no compute
WITH_JOB = GpuSlot(2, 24 * GiB, 0, 4 * GiB, queue_jobs=1)
EMPTY = GpuSlot(3, 24 * GiB, 0, 0)


def test_only_a_card_with_nothing_else_on_it() -> None:
    assert placed([node(FOREIGN, IDLE_FOREIGN, WITH_JOB, EMPTY)], [quiet(1)]) == {1: [3]}
    assert placed([node(FOREIGN, IDLE_FOREIGN, WITH_JOB)], [quiet(1)]) == {}


def test_held_whole_once_placed_within_the_pass() -> None:
    plain = PendingJob(2, 0, 2.0, 1, 2 * GiB)
    assert placed([node(FOREIGN, EMPTY)], [quiet(1), plain]) == {1: [3], 2: [0]}
    # and two quiet jobs do not share the one empty card
    assert placed([node(EMPTY)], [quiet(1), quiet(2)]) == {1: [3]}


def test_several_cards_all_quiet() -> None:
    other = GpuSlot(4, 24 * GiB, 0, 0)
    assert placed([node(FOREIGN, EMPTY, other)], [quiet(1, gpus=2)]) == {1: [3, 4]}
    assert placed([node(FOREIGN, EMPTY)], [quiet(1, gpus=2)]) == {}


def test_why_it_waits_names_what_is_on_the_cards() -> None:
    slot = node(FOREIGN, IDLE_FOREIGN, WITH_JOB)
    facts = NodeFacts(name=slot.name, state="up", slot=slot)
    fit = analyze(quiet(1), facts, headroom_mb=HEADROOM, max_cpu_jobs=4)
    failed = [c for c in fit.checks if not c.ok]
    assert [(c.constraint, c.detail) for c in failed] == [(
        "quiet cards",
        "0 of its GPUs have nothing else on them, needs 1 (--quiet; queue jobs on 1, "
        "processes the queue did not start on 2)",
    )]
    assert summarize(quiet(1), [fit]).reason == "Resources"

