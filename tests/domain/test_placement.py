"""The pure placement function: each rule, a reference model, and invariants."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvq.domain.placement import (
    GpuSlot,
    NodeSlot,
    PendingJob,
    Placement,
    PlacementResult,
    Unschedulable,
    place,
)
from nvq.domain.quotas import Caps, Standing
from tests.property_budget import examples

GiB = 1024
HEADROOM = 512


def card(
    index: int, total: int = 24 * GiB, foreign: int = 0, queue: int = 0, **kw: bool
) -> GpuSlot:
    return GpuSlot(index, total, foreign, queue, **kw)


def gpu_node(
    name: str,
    cards: int = 2,
    *,
    total: int = 24 * GiB,
    accepting: bool = True,
    running: int = 0,
    cpu: int = 0,
    **kw: object,
) -> NodeSlot:
    slots = [card(i, total) for i in range(cards)]
    return NodeSlot(name, accepting, slots, cpu, running, **kw)  # type: ignore[arg-type]


def job(id: int, gpus: int = 1, vram: int = 0, priority: int = 0, **kw: object) -> PendingJob:
    return PendingJob(id, priority, float(id), gpus, vram, **kw)  # type: ignore[arg-type]


def run(nodes: Sequence[NodeSlot], jobs: Sequence[PendingJob], max_cpu: int = 4) -> PlacementResult:
    return place(nodes, jobs, headroom_mb=HEADROOM, max_cpu_jobs=max_cpu)


def placed(result: PlacementResult) -> dict[int, tuple[str, list[int]]]:
    return {p.job_id: (p.node, p.gpus) for p in result.placements}


# -- free memory and fitting -------------------------------------------------------------


def test_free_is_total_minus_foreign_minus_queue_minus_headroom() -> None:
    slot = card(0, total=24576, foreign=4096, queue=8192)
    free = 24576 - 4096 - 8192 - HEADROOM
    node = NodeSlot("a", True, [slot], 0, 0)
    assert placed(run([node], [job(1, vram=free)])) == {1: ("a", [0])}
    result = run([node], [job(1, vram=free + 1)])
    assert result == PlacementResult(placements=[], unschedulable=[])  # waits, not impossible


def test_zero_vram_still_needs_non_negative_free() -> None:
    full = NodeSlot("a", True, [card(0, total=8 * GiB, foreign=8 * GiB)], 0, 0)
    assert run([full], [job(1, vram=0)]).placements == []
    exact = NodeSlot("a", True, [card(0, total=8 * GiB, foreign=8 * GiB - HEADROOM)], 0, 0)
    assert placed(run([exact], [job(1, vram=0)])) == {1: ("a", [0])}


def test_multi_gpu_job_needs_all_cards_on_one_node() -> None:
    # Two nodes with one free card each cannot host a 2-GPU job between them.
    a = NodeSlot("a", True, [card(0), card(1, foreign=24 * GiB)], 0, 0)
    b = NodeSlot("b", True, [card(0), card(1, foreign=24 * GiB)], 0, 0)
    result = run([a, b], [job(1, gpus=2, vram=GiB)])
    assert result.placements == [] and result.unschedulable == []


def test_cards_are_distinct_and_most_free_first_ties_lower_index() -> None:
    node = NodeSlot(
        "a",
        True,
        [card(0, queue=4 * GiB), card(1), card(2, foreign=2 * GiB), card(3), card(4)],
        0,
        0,
    )
    assert placed(run([node], [job(1, gpus=3, vram=GiB)])) == {1: ("a", [1, 3, 4])}
    assert placed(run([node], [job(1, gpus=4, vram=GiB)])) == {1: ("a", [1, 2, 3, 4])}


def test_jobs_that_reserve_no_memory_spread_over_equally_free_cards() -> None:
    """`--gpus 1` without `--vram` deducts nothing, so every card stays equally free:
    the card with fewest queue jobs is taken, in one pass and across passes."""
    node = gpu_node("a", cards=4)
    assert placed(run([node], [job(i) for i in range(1, 6)])) == {
        1: ("a", [0]), 2: ("a", [1]), 3: ("a", [2]), 4: ("a", [3]), 5: ("a", [0]),
    }
    # jobs already there count as much as jobs placed in this pass
    cards = [msgspec.structs.replace(card(i), queue_jobs=n) for i, n in enumerate([2, 0, 1])]
    busy = NodeSlot("a", True, cards, 0, 3)
    assert placed(run([busy], [job(1), job(2, gpus=2)])) == {1: ("a", [1]), 2: ("a", [1, 2])}
    # free memory still comes first: a reserving job leaves its card less free
    assert placed(run([gpu_node("a")], [job(1, vram=GiB), job(2, vram=GiB)])) == {
        1: ("a", [0]), 2: ("a", [1]),
    }
    assert placed(run([gpu_node("a")], [job(1, vram=GiB), job(2), job(3)])) == {
        1: ("a", [0]), 2: ("a", [1]), 3: ("a", [1]),
    }


def test_decisions_are_deducted_within_a_pass() -> None:
    node = gpu_node("a", cards=1)  # 23.5GiB free
    result = run([node], [job(1, vram=12 * GiB), job(2, vram=12 * GiB), job(3, vram=11 * GiB)])
    assert placed(result) == {1: ("a", [0]), 3: ("a", [0])}


def test_a_job_that_does_not_fit_now_is_skipped_for_smaller_ones() -> None:
    node = NodeSlot("a", True, [card(0, foreign=16 * GiB)], 0, 0)
    result = run([node], [job(1, vram=20 * GiB, priority=5), job(2, vram=4 * GiB)])
    assert placed(result) == {2: ("a", [0])}
    assert result.unschedulable == []


# -- order --------------------------------------------------------------------------------


def test_priority_then_age_then_id() -> None:
    node = gpu_node("a", cards=1)
    big = 20 * GiB
    jobs = [
        PendingJob(1, 0, 1.0, 1, big),
        PendingJob(2, 5, 9.0, 1, big),  # highest priority, youngest: still first
    ]
    assert placed(run([node], jobs)) == {2: ("a", [0])}
    jobs = [PendingJob(1, 0, 5.0, 1, big), PendingJob(2, 0, 3.0, 1, big)]
    assert placed(run([node], jobs)) == {2: ("a", [0])}  # older wins
    jobs = [PendingJob(7, 0, 3.0, 1, big), PendingJob(4, 0, 3.0, 1, big)]
    assert placed(run([node], jobs)) == {4: ("a", [0])}  # same age: lower id


# -- node choice --------------------------------------------------------------------------


def test_least_loaded_relative_to_card_count_wins() -> None:
    # 3 jobs on 8 cards is lighter than 1 job on 2 cards.
    small = gpu_node("a-small", cards=2, running=1)
    large = gpu_node("b-large", cards=8, running=3)
    assert placed(run([small, large], [job(1)])) == {1: ("b-large", [0])}


def test_idle_node_beats_busy_one_then_free_memory_then_name() -> None:
    busy = gpu_node("a", running=1)
    idle = gpu_node("b")
    assert placed(run([busy, idle], [job(1)]))[1][0] == "b"
    roomy = NodeSlot("d", True, [card(0, total=80 * GiB), card(1)], 0, 0)
    assert placed(run([idle, roomy], [job(1)]))[1][0] == "d"
    assert placed(run([gpu_node("z"), gpu_node("c")], [job(1)]))[1][0] == "c"


def test_load_spreads_jobs_across_nodes() -> None:
    nodes = [gpu_node("a", cards=2), gpu_node("b", cards=2)]
    result = run(nodes, [job(i, vram=GiB) for i in range(4)])
    assert Counter(node for node, _ in placed(result).values()) == {"a": 2, "b": 2}


def test_non_accepting_node_is_never_chosen_but_counts_for_ever() -> None:
    down = gpu_node("big", cards=8, accepting=False)
    up = gpu_node("small", cards=1)
    result = run([down, up], [job(1, gpus=4), job(2, gpus=1)])
    assert placed(result) == {2: ("small", [0])}
    assert result.unschedulable == []  # job 1 waits for "big"


def test_allowlist_limits_cards() -> None:
    node = NodeSlot("a", True, [card(0, schedulable=False), card(1), card(2)], 0, 0)
    assert placed(run([node], [job(1, gpus=2)])) == {1: ("a", [1, 2])}
    result = run([node], [job(1, gpus=3)])
    assert result.unschedulable == [Unschedulable(1, "needs 3 GPUs; the most on any node is 2")]


def test_node_prefix() -> None:
    nodes = [gpu_node("box406"), gpu_node("box407", running=5), gpu_node("ws")]
    assert placed(run(nodes, [job(1, node="box")]))[1][0] == "box406"
    assert placed(run(nodes, [job(1, node="box407")]))[1][0] == "box407"
    assert placed(run(nodes, [job(1, node="")]))[1][0] == "box406"


# -- CPU jobs ----------------------------------------------------------------------------


def test_cpu_jobs_limited_per_node_counting_this_pass() -> None:
    nodes = [gpu_node("a", cpu=1, running=1), gpu_node("b", cards=0)]
    result = run(nodes, [job(i, gpus=0) for i in range(6)], max_cpu=2)
    counts = Counter(node for node, _ in placed(result).values())
    assert counts == {"a": 1, "b": 2}
    assert all(gpus == [] for _, gpus in placed(result).values())


def test_cpu_job_ignores_gpu_memory() -> None:
    full = NodeSlot("a", True, [card(0, foreign=24 * GiB)], 0, 0)
    assert placed(run([full], [job(1, gpus=0, vram=50 * GiB)])) == {1: ("a", [])}


def test_cpu_jobs_disabled_are_unschedulable() -> None:
    result = run([gpu_node("a")], [job(1, gpus=0)], max_cpu=0)
    assert result.unschedulable == [
        Unschedulable(1, "CPU-only jobs are disabled (max_cpu_jobs_per_node = 0)")
    ]


# -- unschedulable ------------------------------------------------------------------------


def test_too_many_gpus() -> None:
    result = run([gpu_node("a", 2), gpu_node("b", 1)], [job(1, gpus=4)])
    assert result == PlacementResult(
        placements=[], unschedulable=[Unschedulable(1, "needs 4 GPUs; the most on any node is 2")]
    )


def test_too_much_vram() -> None:
    nodes = [gpu_node("a", total=24 * GiB), gpu_node("b", cards=1, total=80 * GiB)]
    result = run(nodes, [job(1, vram=80 * GiB), job(2, gpus=2, vram=30 * GiB)])
    assert result.unschedulable == [
        Unschedulable(
            1, "needs 80GiB of GPU memory; the largest card on any node holds 79.5GiB "
            "after 512MiB headroom"
        ),
        Unschedulable(
            2, "needs 2 GPUs with 30GiB each; the best 2 cards on any node hold 23.5GiB each "
            "after 512MiB headroom"
        ),
    ]  # fmt: skip


def test_vram_limit_uses_total_not_current_use() -> None:
    busy = NodeSlot("a", True, [card(0, total=80 * GiB, foreign=79 * GiB)], 0, 0)
    result = run([busy], [job(1, vram=70 * GiB)])
    assert result == PlacementResult(placements=[], unschedulable=[])


def test_prefix_matching_nothing() -> None:
    result = run([gpu_node("a"), gpu_node("b")], [job(1, node="gpu")])
    assert result.unschedulable == [Unschedulable(1, "--node 'gpu' matches no node (nodes: a, b)")]


def test_prefix_qualifies_the_reason() -> None:
    result = run([gpu_node("a", 8), gpu_node("b", 2)], [job(1, gpus=4, node="b")])
    assert result.unschedulable == [
        Unschedulable(1, "needs 4 GPUs; the most on any node matching --node 'b' is 2")
    ]


def test_no_nodes_means_nothing_is_unschedulable() -> None:
    assert run([], [job(1, gpus=64), job(2, node="nowhere")]) == PlacementResult(
        placements=[], unschedulable=[]
    )


def test_unschedulable_jobs_take_nothing() -> None:
    node = gpu_node("a", cards=1)
    result = run([node], [job(1, gpus=2, priority=9), job(2, vram=20 * GiB)])
    assert placed(result) == {2: ("a", [0])}
    assert [u.job_id for u in result.unschedulable] == [1]


def test_negative_requests_are_refused_not_crashed_on() -> None:
    result = run([gpu_node("a")], [job(1, gpus=-1), job(2, vram=-5)])
    assert [u.job_id for u in result.unschedulable] == [1, 2]
    assert result.placements == []


# -- CUDA and host memory ----------------------------------------------------------------


def test_cuda_minimum() -> None:
    old = gpu_node("old", cuda=(11, 8))
    new = gpu_node("new", cuda=(12, 4), running=3)
    assert placed(run([old, new], [job(1, cuda=(12, 0))]))[1][0] == "new"
    result = run([old, new], [job(1, cuda=(13, 0))])
    assert result.unschedulable == [
        Unschedulable(1, "needs CUDA >= 13.0; the newest driver on any node supports 12.4")
    ]


def test_unknown_cuda_cannot_place_now_but_is_not_impossible() -> None:
    unknown = gpu_node("a")
    result = run([unknown], [job(1, cuda=(12, 0))])
    assert result == PlacementResult(placements=[], unschedulable=[])


def test_host_memory() -> None:
    small = gpu_node("a", memory_total_mb=64 * GiB, memory_free_mb=8 * GiB)
    big = gpu_node("b", memory_total_mb=512 * GiB, memory_free_mb=100 * GiB, running=4)
    jobs = [job(1, memory_mb=60 * GiB), job(2, memory_mb=60 * GiB), job(3, memory_mb=GiB)]
    assert placed(run([small, big], jobs)) == {1: ("b", [0]), 3: ("a", [0])}
    result = run([small, big], [job(1, memory_mb=1024 * GiB)])
    assert result.unschedulable == [
        Unschedulable(1, "needs 1TiB of host memory; the most on any node is 512GiB")
    ]


# -- a reference model, written straight from the rules ---------------------------------


def reference(
    nodes: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    headroom: int,
    max_cpu: int,
    usage: dict[str, float] | None = None,
    caps: dict[str, tuple[int, int]] | None = None,
) -> tuple[list[Placement], set[int]]:
    if not nodes:
        return [], set()
    free = {
        (n.name, g.index): g.total_mb - g.foreign_mb - g.queue_mb - headroom
        for n in nodes
        for g in n.gpus
        if g.schedulable
    }
    on_card = {(n.name, g.index): g.queue_jobs for n in nodes for g in n.gpus}
    # Cards a job holds whole: none is placed there (their free counts as none).
    held = {(n.name, g.index) for n in nodes for g in n.gpus if g.held}
    cpu = {n.name: n.cpu_jobs for n in nodes}
    running = {n.name: n.running_jobs for n in nodes}
    memory = {n.name: n.memory_free_mb for n in nodes}
    placements: list[Placement] = []
    never: set[int] = set()
    used = usage or {}
    left = {user: list(cap) for user, cap in (caps or {}).items()}  # [cards, jobs] per user
    # Priority, then (fair share) the account that used least, then age, then id.
    for j in sorted(
        pending, key=lambda j: (-j.priority, used.get(j.account, 0.0), j.created_at, j.id)
    ):
        matching = [n for n in nodes if j.node is None or n.name.startswith(j.node)]

        def could_ever(n: NodeSlot, j: PendingJob = j) -> bool:
            if j.cuda is not None and n.cuda is not None and n.cuda < j.cuda:
                return False
            if j.memory_mb and n.memory_total_mb is not None and n.memory_total_mb < j.memory_mb:
                return False
            if j.gpus == 0:
                return max_cpu > 0
            sizes = [g.total_mb - headroom for g in n.gpus if g.schedulable]
            return sum(size >= j.vram_mb for size in sizes) >= j.gpus

        if not any(could_ever(n) for n in matching):
            never.add(j.id)
            continue
        mine = left.get(j.user)
        if mine is not None and (mine[1] < 1 or mine[0] < j.gpus):
            continue  # its user's limit holds it back

        def cards_for(n: NodeSlot, j: PendingJob = j) -> list[int] | None:
            if not n.accepting:
                return None
            if j.cuda is not None and (n.cuda is None or n.cuda < j.cuda):
                return None
            have = memory[n.name]
            if j.memory_mb and have is not None and have < j.memory_mb:
                return None
            if j.gpus == 0:
                return [] if cpu[n.name] < max_cpu else None
            fitting = sorted(
                (-free[n.name, g.index], on_card[n.name, g.index], g.index)
                for g in n.gpus
                if g.schedulable and free[n.name, g.index] >= j.vram_mb
                and (n.name, g.index) not in held
                and not (j.whole and on_card[n.name, g.index])
            )
            return [index for *_, index in fitting[: j.gpus]] if len(fitting) >= j.gpus else None

        def load(n: NodeSlot) -> tuple[Fraction, int, str]:
            cards = [g for g in n.gpus if g.schedulable]
            total_free = sum(
                max(0, free[n.name, g.index]) for g in cards if (n.name, g.index) not in held
            )
            return (Fraction(running[n.name], max(1, len(cards))), -total_free, n.name)

        options = [(load(n), n) for n in matching if cards_for(n) is not None]
        if not options:
            continue
        _, best = min(options, key=lambda option: option[0])
        chosen = cards_for(best)
        assert chosen is not None
        for index in chosen:
            free[best.name, index] -= j.vram_mb
            on_card[best.name, index] += 1
            if j.whole:
                held.add((best.name, index))
        if j.gpus == 0:
            cpu[best.name] += 1
        running[best.name] += 1
        if j.memory_mb and memory[best.name] is not None:
            memory[best.name] = memory[best.name] - j.memory_mb  # type: ignore[operator]
        placements.append(Placement(j.id, best.name, sorted(chosen)))
        if mine is not None:
            mine[0] -= j.gpus
            mine[1] -= 1
    return placements, never


# -- properties ---------------------------------------------------------------------------

NAMES = ["a1", "a2", "ab", "b1", "b2", "c"]
CUDAS = st.one_of(st.none(), st.sampled_from([(11, 8), (12, 0), (12, 4), (13, 0)]))


@st.composite
def clusters(draw: st.DrawFn) -> list[NodeSlot]:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=5, unique=True))
    nodes = []
    for name in names:
        cards = []
        for index in range(draw(st.integers(0, 4))):
            total = draw(st.sampled_from([8, 16, 24, 80])) * GiB
            foreign = draw(st.integers(0, total // GiB)) * GiB
            queue = draw(st.sampled_from([0, 0, 2 * GiB, 10 * GiB]))
            jobs = draw(st.integers(0, 2))
            cards.append(GpuSlot(index, total, foreign, queue, draw(st.booleans() | st.just(True)),
                                 queue_jobs=jobs, held=jobs > 0 and draw(st.booleans())))
        total_mem = draw(st.none() | st.sampled_from([32, 256]).map(lambda g: g * GiB))
        free_mem = None if total_mem is None else draw(st.integers(0, total_mem // GiB)) * GiB
        nodes.append(
            NodeSlot(
                name,
                draw(st.booleans() | st.just(True)),
                cards,
                draw(st.integers(0, 3)),
                draw(st.integers(0, 6)),
                draw(CUDAS),
                total_mem,
                free_mem,
            )
        )
    return nodes


@st.composite
def pendings(draw: st.DrawFn) -> list[PendingJob]:
    count = draw(st.integers(0, 25))
    return [
        PendingJob(
            i,
            draw(st.integers(0, 3)),
            float(draw(st.integers(0, 5))),
            draw(st.sampled_from([0, 1, 1, 1, 2, 4, 5])),
            draw(st.sampled_from([0, 1, 4, 8, 12, 20, 30, 79, 90])) * GiB,
            draw(st.sampled_from([None, None, None, "a", "a1", "b", "zz", ""])),
            draw(CUDAS) if draw(st.integers(0, 3)) == 0 else None,
            draw(st.sampled_from([0, 0, 0, 4 * GiB, 64 * GiB])),
            user=(who := draw(st.sampled_from(["alice", "bob", "carol"]))),
            account=who,
            whole=draw(st.booleans()),
        )
        for i in range(count)
    ]


USAGES = st.none() | st.dictionaries(
    st.sampled_from(["alice", "bob", "carol"]), st.sampled_from([0.0, 1.0, 2.5, 3600.0])
)
# Users' limits: (cards, jobs) each may still start.
CAPS = st.none() | st.dictionaries(
    st.sampled_from(["alice", "bob", "carol"]), st.tuples(st.integers(0, 4), st.integers(0, 3))
)


def residual_fits(
    nodes: Sequence[NodeSlot],
    placements: Sequence[Placement],
    pending: dict[int, PendingJob],
    j: PendingJob,
    max_cpu: int,
) -> bool:
    """Would `j` fit in what is left after `placements`?"""
    used: Counter[tuple[str, int]] = Counter()
    cpu: Counter[str] = Counter()
    mem: Counter[str] = Counter()
    taken: Counter[tuple[str, int]] = Counter()  # jobs placed on a card in the pass
    held = {(n.name, g.index) for n in nodes for g in n.gpus if g.held}
    for p in placements:
        for index in p.gpus:
            used[p.node, index] += pending[p.job_id].vram_mb
            taken[p.node, index] += 1
            if pending[p.job_id].whole:
                held.add((p.node, index))
        cpu[p.node] += pending[p.job_id].gpus == 0
        mem[p.node] += pending[p.job_id].memory_mb
    for n in nodes:
        if not n.accepting or (j.node is not None and not n.name.startswith(j.node)):
            continue
        if j.cuda is not None and (n.cuda is None or n.cuda < j.cuda):
            continue
        have = None if n.memory_free_mb is None else n.memory_free_mb - mem[n.name]
        if j.memory_mb and have is not None and have < j.memory_mb:
            continue
        if j.gpus == 0:
            if n.cpu_jobs + cpu[n.name] < max_cpu:
                return True
            continue
        free = [
            g.total_mb - g.foreign_mb - g.queue_mb - HEADROOM - used[n.name, g.index]
            for g in n.gpus
            if g.schedulable and (n.name, g.index) not in held
            and not (j.whole and g.queue_jobs + taken[n.name, g.index])
        ]
        if sum(f >= j.vram_mb for f in free) >= j.gpus:
            return True
    return False


# Pure, but 400 examples of whole passes: ~15 s of CPU alone, several minutes of
# wall time at -n 8 on 2 cores (a 120 s timeout failed it there).
@pytest.mark.timeout(600)
@settings(max_examples=examples(400), deadline=None)
@given(clusters(), pendings(), st.integers(0, 3), USAGES, CAPS)
def test_matches_reference_and_keeps_invariants(
    nodes: list[NodeSlot],
    pending: list[PendingJob],
    max_cpu: int,
    usage: dict[str, float] | None,
    limits: dict[str, tuple[int, int]] | None,
) -> None:
    caps = None
    if limits is not None:
        caps = Caps(
            Standing(user=u, running_gpus=0, running_jobs=0, max_gpus=g, max_jobs=j)
            for u, (g, j) in limits.items()
        )
    result = place(
        nodes, pending, headroom_mb=HEADROOM, max_cpu_jobs=max_cpu, usage=usage, caps=caps
    )
    want_placements, want_never = reference(nodes, pending, HEADROOM, max_cpu, usage, limits)
    assert result.placements == want_placements
    assert {u.job_id for u in result.unschedulable} == want_never
    assert all(u.reason and "\n" not in u.reason for u in result.unschedulable)

    by_id = {j.id: j for j in pending}
    by_name = {n.name: n for n in nodes}
    ids = [p.job_id for p in result.placements] + [u.job_id for u in result.unschedulable]
    assert len(ids) == len(set(ids))  # no job placed twice, or placed and refused

    new_vram: Counter[tuple[str, int]] = Counter()
    new_cpu: Counter[str] = Counter()
    for p in result.placements:
        j, n = by_id[p.job_id], by_name[p.node]
        assert n.accepting
        assert j.node is None or n.name.startswith(j.node)
        assert len(p.gpus) == j.gpus == len(set(p.gpus))
        schedulable = {g.index for g in n.gpus if g.schedulable}
        assert set(p.gpus) <= schedulable  # allowlist respected
        for index in p.gpus:
            new_vram[p.node, index] += j.vram_mb
        if j.gpus == 0:
            new_cpu[p.node] += 1

    # A job holding cards whole got cards no queue job was on, held by none, and no
    # other job of the pass went there; no job went to a card held at the start.
    on_cards: Counter[tuple[str, int]] = Counter((p.node, i) for p in result.placements for i in p.gpus)
    for p in result.placements:
        n = by_name[p.node]
        for index in p.gpus:
            g = next(g for g in n.gpus if g.index == index)
            assert not g.held
            if by_id[p.job_id].whole:
                assert g.queue_jobs == 0 and on_cards[p.node, index] == 1

    # Every card given work had room for all of it at the start of the pass.
    for (name, index), vram in new_vram.items():
        g = next(g for g in by_name[name].gpus if g.index == index)
        assert g.total_mb - g.foreign_mb - g.queue_mb - HEADROOM >= vram
    for name, count in new_cpu.items():
        assert by_name[name].cpu_jobs + count <= max_cpu

    # A placed job never jumps a strictly higher-priority job of the same shape.
    def shape(j: PendingJob) -> tuple[object, ...]:
        return (j.gpus, j.vram_mb, j.node, j.cuda, j.memory_mb, j.whole)

    placed_ids = {p.job_id for p in result.placements}
    for p in result.placements:
        j = by_id[p.job_id]
        for other in pending:
            if other.user != j.user and limits is not None:
                continue  # another user's limit may hold theirs back
            if shape(other) == shape(j) and other.priority > j.priority:
                assert other.id in placed_ids
            # Fair share: nor an equal-priority one of an account that used less lately.
            used = usage or {}
            less = used.get(other.account, 0.0) < used.get(j.account, 0.0)
            if shape(other) == shape(j) and other.priority == j.priority and less:
                assert other.id in placed_ids

    # Nothing left waiting would fit in what remains: the pass is maximal.
    refused = {u.job_id for u in result.unschedulable}
    for j in pending:
        if j.id not in placed_ids and j.id not in refused and limits is None:
            assert not residual_fits(nodes, result.placements, by_id, j, max_cpu)
    # No user starts more than their limits allow.
    for user, (cards, count) in (limits or {}).items():
        theirs = [p for p in result.placements if by_id[p.job_id].user == user]
        assert len(theirs) <= count
        assert sum(len(p.gpus) for p in theirs) <= cards


# -- speed ---------------------------------------------------------------------------------


def big_cluster(rng: random.Random) -> list[NodeSlot]:
    return [
        NodeSlot(
            f"node{n:02d}",
            rng.random() > 0.05,
            [
                GpuSlot(i, 80 * GiB, rng.choice([0, 0, 10 * GiB]), rng.choice([0, 20 * GiB]))
                for i in range(8)
            ],
            rng.randint(0, 4),
            rng.randint(0, 8),
        )
        for n in range(64)
    ]


def test_an_image_job_goes_only_to_a_node_with_a_runtime() -> None:
    nodes = [gpu_node("bare"), gpu_node("boxed", running=3, runtime="podman")]
    assert placed(run(nodes, [job(1, image=True), job(2)])) == {
        1: ("boxed", [0]), 2: ("bare", [0])}
    result = run([gpu_node("bare")], [job(1, image=True)])
    assert result.unschedulable == [Unschedulable(
        1, "runs in a container image; no node has a container runtime (podman, docker or "
        "apptainer)")]
