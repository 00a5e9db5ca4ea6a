"""Placement prefers cards with little foreign utilisation (card_choice.py, placement)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nvq.domain.card_choice import QUIET_BELOW, busyness, pick
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from tests.property_budget import examples

GiB = 1024


def node(name: str, *cards: tuple[int, int], running: int = 0) -> NodeSlot:
    """cards: (foreign MiB, foreign utilisation %) of 24 GiB cards."""
    gpus = [GpuSlot(i, 24 * GiB, f, 0, foreign_util=u) for i, (f, u) in enumerate(cards)]
    return NodeSlot(name, True, gpus, 0, running)


def job(id: int, gpus: int = 1, vram: int = 4 * GiB) -> PendingJob:
    return PendingJob(id, 0, float(id), gpus, vram)


def test_a_quiet_card_wins_over_a_busy_one_with_more_free_memory() -> None:
    (p,) = place([node("ws", (0, 95), (8 * GiB, 0))], [job(1)], headroom_mb=0,
                 max_cpu_jobs=1).placements
    assert (p.node, p.gpus, p.note) == ("ws", [1], "")


def test_a_node_with_only_busy_cards_yields_to_one_with_quiet_cards() -> None:
    nodes = [node("a", (0, 95)), node("b", (0, 0), running=1)]  # a is less loaded
    (p,) = place(nodes, [job(1)], headroom_mb=0, max_cpu_jobs=1).placements
    assert (p.node, p.gpus) == ("b", [0])


def test_the_only_card_with_room_is_taken_and_said_so() -> None:
    nodes = [node("a", (0, 95)), node("b", (22 * GiB, 0))]
    (p,) = place(nodes, [job(1)], headroom_mb=0, max_cpu_jobs=1).placements
    assert (p.node, p.gpus) == ("a", [0])
    assert p.note == ("placed on a:0 (95 % busy) with work the queue did not start: "
                      "the only card with room")


def test_low_utilisation_does_not_reorder_cards_by_memory() -> None:
    (p,) = place([node("ws", (0, QUIET_BELOW - 1), (8 * GiB, 0))], [job(1)], headroom_mb=0,
                 max_cpu_jobs=1).placements
    assert p.gpus == [0]  # the most free, as by memory alone


def test_the_least_busy_of_busy_cards_first() -> None:
    (p,) = place([node("ws", (0, 90), (0, 40), (0, 70))], [job(1, gpus=2)], headroom_mb=0,
                 max_cpu_jobs=1).placements
    assert p.gpus == [1, 2]


CARDS = st.lists(st.tuples(st.integers(-20, 20), st.integers(0, 100)), min_size=1, max_size=8)


@settings(max_examples=examples(200), deadline=None)
@given(CARDS, st.integers(1, 4), st.integers(0, 15))
def test_pick_takes_fitting_cards_and_never_a_busy_one_over_a_quiet_one(
    spec: list[tuple[int, int]], gpus: int, vram: int,
) -> None:
    cards = sorted((-free, i) for i, (free, _) in enumerate(spec))
    busy = {i: u for i, (_, u) in enumerate(spec) if busyness(u)}
    got = pick(cards, gpus, vram, busy)
    fitting = [c for c in cards if -c[0] >= vram]
    assert len(got) == min(gpus, len(fitting)) and all(c in fitting for c in got)
    left = [c for c in fitting if c not in got]
    worst = max((busyness(busy.get(i, 0)) for _, i in got), default=0)
    assert all(busyness(busy.get(i, 0)) >= worst for _, i in left)
    if not busy:
        assert got == fitting[:gpus]  # memory alone, as before
