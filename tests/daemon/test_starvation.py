"""No starvation: the pure reservation/backfill rule, and the daemon applying it."""

from __future__ import annotations

import time
from pathlib import Path

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob
from nvq.domain.starvation import Reservation, RunningJob, choose_node, may_backfill, place_fairly
from tests.cluster import Nvq


def _slot(name: str, free_cards: int) -> NodeSlot:
    gpus = [GpuSlot(i, 24576, 0, 0 if i < free_cards else 20000) for i in range(2)]
    return NodeSlot(name=name, accepting=True, gpus=gpus, cpu_jobs=0, running_jobs=2 - free_cards)


BIG = PendingJob(1, 0, 0.0, 2, 20000)
SMALL = PendingJob(2, 0, 1.0, 1, 20000)
QUICK = PendingJob(3, 0, 2.0, 1, 20000)


def _plan(now: float, timeouts: dict[int, float | None]) -> tuple[list[int], Reservation | None]:
    result, res = place_fairly(
        [_slot("a", 1)],
        [BIG, SMALL, QUICK],
        waiting_since={1: 0.0, 2: 0.0, 3: 0.0},
        timeouts=timeouts,
        running=[RunningJob("a", 100.0)],
        now=now,
        starvation_after=10.0,
        headroom_mb=0,
        max_cpu_jobs=4,
    )
    return sorted(p.job_id for p in result.placements), res


def test_before_starvation_small_jobs_pass_the_head() -> None:
    assert _plan(5.0, {})[0] == [2]  # one free card: the first small job takes it
    assert _plan(5.0, {})[1] is None


def test_a_starving_head_reserves_and_only_timely_jobs_backfill() -> None:
    placed, res = _plan(50.0, {2: None, 3: 30.0})
    assert res == Reservation(1, "a", 100.0)
    assert placed == [3]  # ends by 80 < 100; job 2 might run forever
    placed, _ = _plan(50.0, {2: 60.0, 3: 30.0})
    assert placed == [3]  # 2 would end at 110 > 100; 3 takes the card first anyway


def test_choose_node_prefers_the_one_freeing_first() -> None:
    slots = [_slot("a", 0), _slot("b", 0), _slot("c", 2)]
    running = [RunningJob("a", 50.0), RunningJob("b", 20.0), RunningJob("b", 30.0)]
    assert choose_node(BIG, slots, running, 0) == ("c", 0.0)  # idle: free now
    assert choose_node(BIG, slots[:2], running, 0) == ("b", 30.0)
    assert choose_node(BIG, slots[:2], [*running, RunningJob("b", None)], 0) == ("a", 50.0)
    assert choose_node(PendingJob(9, 0, 0, 3, 1), slots, running, 0) is None
    assert not may_backfill(None, 0.0, Reservation(1, "a", 10.0))
    assert not may_backfill(5.0, 0.0, Reservation(1, "a", None))
    assert may_backfill(5.0, 0.0, Reservation(1, "a", 5.0))


def test_a_big_job_is_not_starved_by_a_stream_of_small_ones(nvq: Nvq, tmp_path: Path) -> None:
    nvq.write_config('[queue]\nstarvation_after = "1s"\n')
    gate = tmp_path / "gate"
    hold = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    first = nvq.submit("--vram", "10GiB", "--", hold)
    nvq.wait_for(first["id"], lambda j: j["state"] == "running")
    big = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "true")
    # Once it has waited past starvation_after, the big job reserves the node...
    nvq.wait_for(big["id"], lambda j: "reservation of node local" in (j["why"] or ""))
    # ...so small untimed jobs that would fit now keep off it: without the reservation
    # they would hold a card each forever and the big job would never start.
    small = [nvq.submit("--vram", "10GiB", "--", hold) for _ in range(2)]
    time.sleep(1.5)  # placement passes run on every submit and sample
    assert [nvq.show(s["id"])["state"] for s in small] == ["pending", "pending"]
    gate.touch()
    code, (done,) = nvq.wait(big["id"], timeout=60)
    assert code == 0 and done["state"] == "completed"
    code, _ = nvq.wait(*(s["id"] for s in small), timeout=60)
    assert code == 0
