"""Reservations' rules, pure: which cards a job may use before, during and after a
window, the checks on a new reservation, and placement on only some cards."""

from __future__ import annotations

import pytest

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place
from nvq.domain.reservations import (
    CardReservation,
    ReservationError,
    check_new,
    choose_cards,
    closed_to,
    in_window,
    next_change,
    waiting_for,
)

GiB = 1024
H = 3600.0


def res(
    name: str = "r", cards: tuple[str, ...] = ("n0:0",), start: float = H, end: float = 3 * H
) -> CardReservation:
    return CardReservation(name=name, cards=list(cards), start=start, end=end)


def test_an_untimed_job_keeps_off_cards_with_a_window_to_come() -> None:
    r = [res()]
    assert closed_to(r, None, now=0.0) == {("n0", 0)}
    assert closed_to(r, 0.5 * H, now=0.0) == set()  # ends before the window
    assert closed_to(r, 2 * H, now=0.0) == {("n0", 0)}  # would reach it
    assert closed_to(r, 60.0, now=2 * H) == {("n0", 0)}  # the window is open
    assert closed_to(r, None, now=3 * H) == set()  # over


def test_a_reservation_job_waits_for_its_window() -> None:
    r = res()
    assert waiting_for(r, "r", 0.0) is not None and not in_window(r, 0.0)
    assert waiting_for(r, "r", 2 * H) is None and in_window(r, 2 * H)
    assert "ended" in (waiting_for(r, "r", 4 * H) or "")
    assert "no longer exists" in (waiting_for(None, "r", 0.0) or "")
    assert next_change([r], 0.0) == H and next_change([r], 2 * H) == 3 * H


def test_a_new_reservation_is_checked() -> None:
    made = check_new(res(cards=("n0:1", "n0:0", "n0:1")), [], 0.0)
    assert made.cards == ["n0:0", "n0:1"]
    with pytest.raises(ReservationError, match="already reserved by a"):
        check_new(res("b", start=2 * H, end=4 * H), [res("a")], 0.0)
    check_new(res("b", start=3 * H, end=4 * H), [res("a")], 0.0)  # back to back is fine
    with pytest.raises(ReservationError, match="exists"):
        check_new(res("a", cards=("n1:0",)), [res("a")], 0.0)
    for bad in (res(end=H), res(start=0.0, end=-1.0), res(cards=("n0",)), res(cards=())):
        with pytest.raises(ReservationError):
            check_new(bad, [], 0.0)


def test_gpus_pick_free_cards_on_the_fewest_nodes() -> None:
    cards = {"a": [0, 1], "b": [0, 1, 2, 3]}
    assert choose_cards(cards, 3, [], 0.0, H) == ["b:0", "b:1", "b:2"]
    # b:0-b:2 held over an overlapping window: a's two whole, then b:3.
    held = res("x", cards=("b:0", "b:1", "b:2"), start=0.5 * H, end=2 * H)
    assert choose_cards(cards, 3, [held], 0.0, H) == ["a:0", "a:1", "b:3"]
    assert choose_cards(cards, 3, [held], 2 * H, 3 * H) == ["b:0", "b:1", "b:2"]  # after it
    with pytest.raises(ReservationError, match="3 cards are free"):
        choose_cards(cards, 4, [held], 0.0, H)


def _node(name: str, used: list[int], running: int = 0) -> NodeSlot:
    cards = [GpuSlot(i, 24 * GiB, 0, mb) for i, mb in enumerate(used)]
    return NodeSlot(name, True, cards, 0, running)


def _job(id: int, gpus: int = 1, **kw: object) -> PendingJob:
    return PendingJob(id, 0, float(id), gpus, 10 * GiB, **kw)  # type: ignore[arg-type]


def test_placement_keeps_jobs_on_their_cards() -> None:
    slots = [_node("n0", [0, 0]), _node("n1", [0, 0], running=1)]
    kept = frozenset({("n0", 0), ("n0", 1)})
    # The least loaded node is closed to it: it goes to n1.
    (p,) = place(slots, [_job(1, closed=kept)], headroom_mb=512, max_cpu_jobs=2).placements
    assert p.node == "n1"
    # Only the reserved card: n0:1, even though n0:0 has as much room.
    one = _job(2, only=frozenset({("n0", 1)}))
    (p,) = place(slots, [one], headroom_mb=512, max_cpu_jobs=2).placements
    assert (p.node, p.gpus) == ("n0", [1])
    # Two GPUs asked, one card allowed: it waits.
    two = _job(3, gpus=2, only=frozenset({("n0", 1)}))
    assert not place(slots, [two], headroom_mb=512, max_cpu_jobs=2).placements
    # What the restricted path takes is deducted: a second 20 GiB job cannot share it.
    jobs = [
        PendingJob(4, 0, 4.0, 1, 20 * GiB, only=frozenset({("n0", 1)})),
        PendingJob(5, 0, 5.0, 1, 20 * GiB, closed=frozenset({("n0", 0), ("n1", 0), ("n1", 1)})),
    ]
    placed = place(slots, jobs, headroom_mb=512, max_cpu_jobs=2).placements
    assert [(p.job_id, p.node, p.gpus) for p in placed] == [(4, "n0", [1])]
