"""Unit tests of the pure scheduling-policy functions: ordering, arrays, lanes,
permissions, matching and the policy transitions (every state for each)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nvq.domain import arrays, deps, lanes, ordering, permissions, transitions
from nvq.domain.matching import memory_free, node_cuda, parse_cuda
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from nvq.domain.request import record_of
from nvq.domain.transitions import TransitionError
from nvq.model import FINISHED_STATES, Job, JobRecord, JobSpec, JobState
from nvq_runner.protocol import JobExited, JobLost


def job(id: int = 1, state: JobState = JobState.PENDING, **kw: object) -> JobRecord:
    base = Job(
        id=id,
        name="j",
        state=state,
        command="c",
        user="ann",
        submitter="ann",
        created_at=float(id),
        rank=float(id),
    )
    return record_of(msgspec.structs.replace(base, **kw))


# ---------------------------------------------------------------- ordering


@pytest.mark.parametrize(
    ("current", "change", "want"),
    [(0, "5", 5), (3, "+1", 4), (3, "-2", 1), (-1, "0", 0), (2, " +10 ", 12)],
)
def test_new_priority(current: int, change: str, want: int) -> None:
    assert ordering.new_priority(current, change) == want


@pytest.mark.parametrize("bad", ["", "x", "+", "1.5", "--1"])
def test_new_priority_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        ordering.new_priority(0, bad)


def _after_move(keys: list[ordering.Key], job_id: int, k: int) -> list[int]:
    prio, rank = ordering.move(keys, job_id, k)
    moved = [x if x.id != job_id else ordering.Key(job_id, prio, rank) for x in keys]
    return [x.id for x in sorted(moved, key=ordering.Key.sort_key)]


@given(
    st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 50)), min_size=1, max_size=12),
    st.data(),
)
def test_move_lands_exactly_k_places_away(spec: list[tuple[int, int]], data: st.DataObject) -> None:
    keys = [ordering.Key(i + 1, p, float(r) + i / 100) for i, (p, r) in enumerate(spec)]
    before = [x.id for x in sorted(keys, key=ordering.Key.sort_key)]
    mover = data.draw(st.sampled_from(before))
    k = data.draw(st.integers(-15, 15))
    after = _after_move(keys, mover, k)
    want = [x for x in before if x != mover]
    want.insert(max(0, min(len(want), before.index(mover) - k)), mover)
    assert after == want  # and every other job keeps its relative order


def test_move_of_a_job_not_pending_is_refused() -> None:
    with pytest.raises(ValueError, match="not pending"):
        ordering.move([ordering.Key(1, 0, 1.0)], 2, 1)


# ---------------------------------------------------------------- arrays


@pytest.mark.parametrize(
    ("text", "indices", "limit"),
    [
        ("0-3", [0, 1, 2, 3], None),
        ("0-9:3%2", [0, 3, 6, 9], 2),
        ("5", [5], None),
        ("1-2%1", [1, 2], 1),
    ],
)
def test_parse_array(text: str, indices: list[int], limit: int | None) -> None:
    spec = arrays.parse_array(text)
    assert list(spec.indices()) == indices and spec.limit == limit


@pytest.mark.parametrize("bad", ["", "a-b", "5-1", "0-9:0", "0-9%0", "0-200000", "-1-3"])
def test_parse_array_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        arrays.parse_array(bad)


def test_expand_substitutes_and_sets_environment() -> None:
    template = job(0, command="train --seed {} --out r{}", env={"A": "1"})
    members = arrays.expand(template, arrays.parse_array("2-6:2%1"), 100)
    assert [m.id for m in members] == [100, 101, 102]
    assert members[1].spec.command == "train --seed 4 --out r4"
    assert members[1].spec.env == {"A": "1", "NVQ_ARRAY_INDEX": "4", "NVQ_ARRAY_ID": "100"}
    assert {m.array_id for m in members} == {100} and members[2].array_limit == 1
    assert template.spec.env == {"A": "1"}  # the template is not touched


def test_admit_caps_running_members() -> None:
    a = [job(i, array_id=10, array_limit=2) for i in range(10, 15)]
    other = job(20)
    running = [job(10, JobState.RUNNING, array_id=10, array_limit=2)]
    admitted = arrays.admit([*a[1:], other], running)
    assert [j.id for j in admitted] == [11, 20]  # one slot left of 2
    assert [j.id for j in arrays.admit(a, [])] == [10, 11]


# ---------------------------------------------------------------- lanes


def test_lane_reorders() -> None:
    order = [1, 2, 3, 4]
    assert lanes.move_to(order, 3, "head") == [3, 1, 2, 4]
    assert lanes.move_to(order, 1, 3) == [2, 3, 1, 4]
    assert lanes.move_to(order, 1, 99) == [2, 3, 4, 1]
    assert lanes.move_before(order, 4, 2) == [1, 4, 2, 3]
    assert lanes.swap(order, 1, 4) == [4, 2, 3, 1]
    assert lanes.skip(order) == [2, 3, 4, 1]
    assert lanes.assign(order, 9, "head") == [9, 1, 2, 3, 4]
    assert lanes.assign(order, 9, 2) == [1, 9, 2, 3, 4]
    assert lanes.numbered([7, 5]) == {7: 1.0, 5: 2.0}


@pytest.mark.parametrize(
    "call",
    [
        lambda: lanes.move_to([1], 2, "head"),
        lambda: lanes.move_to([1], 1, 0),
        lambda: lanes.move_to([1], 1, "nowhere"),
        lambda: lanes.move_before([1, 2], 1, 1),
        lambda: lanes.swap([1], 1, 3),
        lambda: lanes.skip([]),
        lambda: lanes.parse_lane("box"),
        lambda: lanes.parse_lane("box:x"),
    ],
)
def test_lane_errors(call: object) -> None:
    with pytest.raises(lanes.LaneError):
        call()  # type: ignore[operator]


def test_parse_lane() -> None:
    assert lanes.parse_lane("box406:1") == ("box406", 1)


def _lane(
    *jobs: JobRecord, paused: bool = False, dep: dict[int, deps.DepStatus] | None = None
) -> lanes.LaneStatus:
    return lanes.lane_status("n:0", list(jobs), paused=paused, dep_status=dep or {})


def test_lane_status_every_head_state() -> None:
    a, b = job(1, lane="n:0", lane_pos=2.0), job(2, lane="n:0", lane_pos=1.0)
    assert _lane(a, b).next == 2 and _lane(a, b).queue == [2, 1]
    assert _lane().next is None and _lane().blocked is None
    assert _lane(a, b, paused=True).next is None and _lane(a, b, paused=True).paused
    run = job(3, JobState.RUNNING, lane="n:0", lane_pos=0.5)
    assert _lane(a, run).running == 3 and _lane(a, run).next is None
    held = msgspec.structs.replace(b, state=JobState.HELD)
    assert _lane(a, held).blocked == "held:2" and _lane(a, held).next is None
    paused_job = msgspec.structs.replace(b, state=JobState.PAUSED)
    assert _lane(a, paused_job).blocked == "paused:2"
    assert _lane(a, b, dep={2: deps.Waiting(9)}).blocked == "waiting:9"
    assert _lane(a, b, dep={2: deps.Blocked(9, JobState.FAILED)}).blocked == "held:2"
    done = job(4, JobState.COMPLETED, lane="n:0", lane_pos=0.1)
    assert _lane(a, done).next == 1  # ended jobs are not in the queue


# ---------------------------------------------------------------- permissions


def test_permissions() -> None:
    j = job(1)
    assert permissions.may_manage(j, "ann", [])
    assert not permissions.may_manage(j, "bob", [])
    assert permissions.may_manage(j, "bob", ["bob"])
    with pytest.raises(TransitionError, match="belongs to ann"):
        permissions.check([j], "bob", ["root"], "pause")


# ---------------------------------------------------------------- matching


def test_cuda_and_memory() -> None:
    assert parse_cuda("13.0") == (13, 0) and parse_cuda("12") == (12, 0)
    with pytest.raises(ValueError):
        parse_cuda("twelve")
    assert node_cuda("junk") is None and node_cuda(None) is None
    assert memory_free(None, 10, 0) is None
    assert memory_free(64, 60, 32) == 32  # promised but not yet used still counts
    assert memory_free(64, 4, 10) == 4  # foreign use the sample sees
    assert memory_free(64, None, 10) == 54


def _node(name: str, cuda: tuple[int, int] | None, mem: int, free: int | None = None) -> NodeSlot:
    gpus = [GpuSlot(index=i, total_mb=24576, foreign_mb=0, queue_mb=0) for i in range(2)]
    return NodeSlot(
        name=name,
        accepting=True,
        gpus=gpus,
        cpu_jobs=0,
        running_jobs=0,
        cuda=cuda,
        memory_total_mb=mem,
        memory_free_mb=mem if free is None else free,
    )


def test_placement_matches_cuda_and_memory_and_explains_never() -> None:
    nodes = [_node("old", (12, 2), 65536), _node("new", (13, 0), 16384)]
    res = place(
        nodes,
        [
            PendingJob(1, 0, 1.0, 1, 0, cuda=(13, 0)),
            PendingJob(2, 0, 2.0, 1, 0, memory_mb=32768),
            PendingJob(3, 0, 3.0, 1, 0, cuda=(14, 0)),
            PendingJob(4, 0, 4.0, 1, 0, memory_mb=1 << 20),
        ],
        headroom_mb=0,
        max_cpu_jobs=4,
    )
    where = {p.job_id: p.node for p in res.placements}
    assert where == {1: "new", 2: "old"}
    why = {u.job_id: u.reason for u in res.unschedulable}
    assert "CUDA >= 14.0" in why[3] and "13.0" in why[3]
    assert "host memory" in why[4]


def test_placement_pins_lane_heads_to_their_card() -> None:
    slot = NodeSlot(
        name="n1",
        accepting=True,
        cpu_jobs=0,
        running_jobs=0,
        gpus=[GpuSlot(0, 24576, 0, 0), GpuSlot(1, 24576, 20000, 0)],
    )
    other = NodeSlot(
        name="n10", accepting=True, cpu_jobs=0, running_jobs=0, gpus=[GpuSlot(1, 24576, 0, 0)]
    )
    res = place(
        [slot, other],
        [
            PendingJob(1, 0, 1.0, 1, 1000, node="n1", gpu=1),
            PendingJob(2, 0, 2.0, 1, 8000, node="n1", gpu=1),
            PendingJob(3, 0, 3.0, 1, 1000, node="n1", gpu=7),
        ],
        headroom_mb=0,
        max_cpu_jobs=4,
    )
    assert [(p.job_id, p.node, p.gpus) for p in res.placements] == [(1, "n1", [1])]
    assert [u.job_id for u in res.unschedulable] == [3]


# ---------------------------------------------------------------- transitions


def _lost(j: JobRecord) -> JobLost:
    return JobLost(seq=1, job_id=j.id, attempt=j.attempt, reason="gone", at=5.0)


def test_lost_retries_until_the_budget_is_spent() -> None:
    j = job(
        1,
        JobState.RUNNING,
        attempt=1,
        node="n",
        gpus=[0],
        retries=2,
        progress="50%",
        note="keep me",
    )
    out = transitions.lost(j, _lost(j), "n")
    new, evs = out.job, out.events
    assert new is not None and new.state is JobState.PENDING and new.retried == 1
    assert new.progress is None and new.spec.note == "keep me" and new.rank == j.rank
    assert [e.kind for e in evs] == ["job_retried"]
    spent = msgspec.structs.replace(j, retried=2)
    out = transitions.lost(spent, _lost(spent), "n")
    new, evs = out.job, out.events
    assert new is not None and new.state is JobState.LOST and evs[0].kind == "job_lost"
    out = transitions.runner_forgot(j, "n", 5.0)
    forgot, evs = out.job, out.events
    assert forgot is not None and forgot.state is JobState.PENDING


def test_nonzero_exit_is_never_retried_and_memory_is_named() -> None:
    j = job(1, JobState.RUNNING, attempt=1, node="n", retries=3, memory_mb=1024)
    ev = JobExited(
        seq=1,
        job_id=1,
        attempt=1,
        exit_code=1,
        signal=None,
        ended_at=2.0,
        reason="exit",
        progress=None,
        stderr_tail="MemoryError\n",
        result=None,
    )
    new = transitions.exited(j, ev, "n").job
    assert new is not None and new.state is JobState.FAILED
    assert "--memory limit of 1GiB" in (new.reason or "")
    plain = msgspec.structs.replace(ev, stderr_tail="boom")
    new = transitions.exited(j, plain, "n").job
    assert new is not None and "memory" not in (new.reason or "")


@pytest.mark.parametrize("state", list(JobState))
def test_requeue_from_every_state(state: JobState) -> None:
    j = job(1, state, progress="p", note="n", exit_code=1, retried=1)
    if state in FINISHED_STATES:
        out = transitions.requeue(j, by="ann", now=99.0)
        new, evs = out.job, out.events
        assert new is not None and new.state is JobState.PENDING and new.rank == 99.0
        assert new.progress is None and new.spec.note == "n" and new.retried == 0
        assert evs[0].kind == "job_requeued"
    else:
        with pytest.raises(TransitionError):
            transitions.requeue(j, by="ann", now=99.0)


@pytest.mark.parametrize("state", list(JobState))
def test_pause_and_resume_from_every_state(state: JobState) -> None:
    j = job(1, state, node="n" if state is JobState.RUNNING else None, attempt=1)
    if state in transitions.PAUSABLE:
        out = transitions.pause(j, by="ann", now=1.0)
        new, evs, reap = out.job, out.events, out.reap
        assert new is not None
        assert new.state is JobState.PAUSED and evs[0].kind == "job_paused"
        assert (reap is not None) == (state is JobState.RUNNING)
        back = transitions.resume(new, by="ann").job
        assert back is not None and back.state is JobState.PENDING and back.rank == j.rank
    else:
        with pytest.raises(TransitionError):
            transitions.pause(j, by="ann", now=1.0)
    if state is not JobState.PAUSED:
        with pytest.raises(TransitionError):
            transitions.resume(j, by="ann")


@pytest.mark.parametrize("state", list(JobState))
def test_edit_after_from_every_state(state: JobState) -> None:
    j = job(5, state, after=[1, 2], note="n", submitter="s", reason="held: x")
    if state in transitions.EDITABLE:
        out = transitions.edit_after(j, drop=[2], add=[3], by="ann")
        new, evs = out.job, out.events
        assert new is not None and new.spec.after == [1, 3] and new.id == 5
        assert (new.spec.note, new.spec.submitter, new.rank) == ("n", "s", j.rank)
        want = JobState.PENDING if state is JobState.HELD else state
        assert new.state is want and evs[0].kind == "job_edited"
        with pytest.raises(TransitionError, match="does not wait for 9"):
            transitions.edit_after(j, drop=[9], add=[], by="ann")
        with pytest.raises(TransitionError, match="itself"):
            transitions.edit_after(j, drop=[], add=[5], by="ann")
    else:
        with pytest.raises(TransitionError):
            transitions.edit_after(j, drop=[2], add=[], by="ann")


@pytest.mark.parametrize("state", list(JobState))
def test_reorder_from_every_state(state: JobState) -> None:
    j = job(1, state)
    if state in FINISHED_STATES:
        with pytest.raises(TransitionError):
            transitions.reorder(j, priority=3, rank=0.5, by="ann")
    else:
        out = transitions.reorder(j, priority=3, rank=0.5, by="ann")
        new, evs = out.job, out.events
        assert new is not None and (new.spec.priority, new.rank) == (3, 0.5)
        assert evs[0].data["was"] == 0


def test_new_job_carries_policy_fields() -> None:
    spec = JobSpec(command="x", retries=2, cuda="13.0", memory_mb=512)
    j = transitions.new_job(spec, user="ann", now=7.0)
    # rank 0: the store numbers it at insert, whatever the clock said.
    assert (j.spec.retries, j.spec.cuda, j.spec.memory_mb, j.rank) == (2, "13.0", 512, 0.0)
