"""The grouped pending queue: a pass over its window decides what a pass over the
whole queue decides, after any sequence of submits, dispatches, cancels, priority
changes and capacity changes (exits, samples, nodes leaving)."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvq.daemon.placement.pending_view import to_pending
from nvq.domain import arrays, ordering
from nvq.domain.pending_groups import Capacity, PendingGroups, merged
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, PlacementResult
from nvq.domain.request import asking, record_of
from nvq.domain.starvation import RunningJob, place_fairly
from nvq.model import Job, JobRecord, JobState
from tests.property_budget import examples

HEADROOM = 500
MAX_CPU = 2

shapes = st.fixed_dictionaries(
    {
        "gpus_requested": st.integers(0, 3),
        "vram_mb": st.sampled_from([0, 4000, 8000, 20000, 90000]),
        "node_request": st.sampled_from([None, None, "a", "zz"]),
        "memory_mb": st.sampled_from([0, 0, 4000, 64000]),
        "user": st.sampled_from(["ann", "bob"]),
        "timeout": st.sampled_from([None, 10.0, 1000.0]),
        "priority": st.integers(0, 2),
        "array": st.sampled_from([None, None, (1, 2), (2, 1), (2, None)]),
    }
)
cards = st.lists(
    st.tuples(st.sampled_from([24000, 81000]), st.integers(0, 30000)), min_size=0, max_size=4
)
nodes = st.lists(
    st.fixed_dictionaries(
        {
            "accepting": st.booleans(),
            "cards": cards,
            "cpu_jobs": st.integers(0, 2),
            "memory_free_mb": st.sampled_from([None, 2000, 100000]),
        }
    ),
    min_size=0,
    max_size=3,
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), shapes, st.integers(1, 40)),
        st.tuples(st.just("remove"), st.integers(0, 10_000)),
        st.tuples(st.just("priority"), st.integers(0, 10_000), st.integers(-1, 3)),
        st.tuples(st.just("nodes"), nodes),
    ),
    min_size=1,
    max_size=12,
)


def _slots(spec: list[dict[str, Any]]) -> list[NodeSlot]:
    out = []
    for i, node in enumerate(spec):
        gpus = [
            GpuSlot(index=k, total_mb=total, foreign_mb=0, queue_mb=used)
            for k, (total, used) in enumerate(node["cards"])
        ]
        out.append(
            NodeSlot(
                name="ab"[i % 2] + str(i),
                accepting=bool(node["accepting"]),
                gpus=gpus,
                cpu_jobs=node["cpu_jobs"],
                running_jobs=len(gpus),
                memory_total_mb=128000,
                memory_free_mb=node["memory_free_mb"],
            )
        )
    return out


def _job(job_id: int, shape: dict[str, Any]) -> JobRecord:
    array = shape["array"]
    fields = {k: v for k, v in shape.items() if k != "array"}
    job = Job(
        id=job_id,
        name="j",
        state=JobState.PENDING,
        command="true",
        user="",
        submitter="",
        created_at=0.0,
    )
    job = msgspec.structs.replace(job, rank=float(job_id), **fields)
    if array is not None:
        array_id, limit = array
        job = msgspec.structs.replace(job, array_id=array_id, array_limit=limit)
    return record_of(job)


RUNNING = [
    msgspec.structs.replace(_job(9000, {"array": (1, 2)}), state=JobState.RUNNING),
]


def _bound(capacity: Capacity, job: JobRecord) -> int:
    return capacity.bound(job.spec.gpus, job.spec.vram_mb)


def _decide(slots: list[NodeSlot], jobs: list[JobRecord], now: float) -> PlacementResult:
    admitted = arrays.admit(ordering.dispatch_order(jobs), RUNNING)
    pending: list[PendingJob] = [to_pending(j, user=j.user) for j in admitted]
    result, _ = place_fairly(
        slots,
        pending,
        waiting_since={p.id: 0.0 for p in pending},
        timeouts={j.id: j.spec.timeout for j in admitted},
        running=[RunningJob("a0", 500.0)],
        now=now,
        starvation_after=50.0,
        headroom_mb=HEADROOM,
        max_cpu_jobs=MAX_CPU,
    )
    return result


@pytest.mark.timeout(600)  # 300 examples of passes: minutes at -n 8 on 2 cores
@settings(max_examples=examples(300), deadline=None)
@given(ops=ops, now=st.sampled_from([0.0, 100.0]))
def test_a_pass_over_the_window_decides_what_a_full_pass_decides(
    ops: list[tuple[Any, ...]], now: float
) -> None:
    groups = PendingGroups()
    jobs: dict[int, JobRecord] = {}
    slots: list[NodeSlot] = []
    next_id = 1
    for op in ops:
        if op[0] == "submit":
            _, shape, count = op
            for _ in range(count):
                jobs[next_id] = _job(next_id, shape)
                groups.update(jobs[next_id])
                next_id += 1
        elif op[0] == "remove" and jobs:
            victim = sorted(jobs)[op[1] % len(jobs)]
            groups.update(msgspec.structs.replace(jobs.pop(victim), state=JobState.RUNNING))
        elif op[0] == "priority" and jobs:
            moved = sorted(jobs)[op[1] % len(jobs)]
            jobs[moved] = asking(jobs[moved], priority=op[2])
            groups.update(jobs[moved])
        elif op[0] == "nodes":
            slots = _slots(op[1])
        capacity = Capacity(slots, headroom_mb=HEADROOM, max_cpu_jobs=MAX_CPU)
        singles, grouped = groups.window(partial(_bound, capacity))
        window = merged(ordering.dispatch_order(singles), ordering.dispatch_order(grouped))
        assert len(groups) == len(jobs)
        full = _decide(slots, list(jobs.values()), now)
        windowed = _decide(slots, window, now)
        assert windowed.placements == full.placements
        # The window holds a group's first members: the rest share their reason.
        bad = {u.job_id: u.reason for u in full.unschedulable}
        for u in windowed.unschedulable:
            assert bad[u.job_id] == u.reason
            group = groups.group_of(u.job_id)
            if group is not None and group.shape[-1] is None:  # %K admits a few at a time
                assert all(member in bad for member in group.members)


def test_a_group_yields_its_members_in_dispatch_order_after_moves() -> None:
    groups = PendingGroups()
    shape = {"gpus_requested": 1, "vram_mb": 1000, "array": None}
    for i in range(1, 6):
        groups.update(_job(i, shape))
    groups.update(asking(_job(4, shape), priority=5))
    groups.update(msgspec.structs.replace(_job(2, shape), state=JobState.RUNNING))
    groups.update(asking(_job(4, shape), priority=0))  # back again
    groups.update(asking(_job(5, shape), priority=1))
    (group,) = groups.groups.values()
    assert [j.id for j in group.ordered()] == [5, 1, 3, 4]
    _, window = groups.window(lambda _j: 1)
    assert [j.id for j in window] == [5, 1]
