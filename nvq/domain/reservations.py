"""Reservations: cards set aside for some users over a window of time (`nvq reserve`,
Slurm's `scontrol create reservation`). Pure: no I/O, the caller passes `now`.

* During its window a reservation's cards run only jobs submitted with
  `--reservation NAME` by its users (none listed: anyone); such a job runs only on
  those cards, and only once the window has opened.
* Before the window other jobs may use the cards only if their `--timeout` (or
  `--max-runtime`) ends before it starts (walltime-aware, as backfill is); an untimed
  job keeps off cards with a window still to come.
* Two reservations may not hold the same card over overlapping windows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from nvq.errors import BadInput

Card = tuple[str, int]  # (node, card index)


class CardReservation(msgspec.Struct, frozen=True, kw_only=True):
    """One reservation, as stored and as `nvq reserve ls --json` shows it."""

    name: str
    cards: list[str]  # "node:index", the node by its full name
    start: float  # Unix seconds
    end: float
    users: list[str] = []  # who may run in it; []: anyone
    note: str = ""
    created_by: str = ""
    created_at: float = 0.0


class ReservationError(BadInput, ValueError):
    """A reservation that cannot be made, in words."""


def parse_card(text: str) -> Card:
    node, sep, index = text.strip().rpartition(":")
    if not sep or not node or not index.isdigit():
        raise ReservationError(f"invalid card {text!r}: expected NODE:INDEX, like gpu1:0")
    return node, int(index)


def card_set(res: CardReservation) -> frozenset[Card]:
    return frozenset(parse_card(c) for c in res.cards)


def check_new(
    res: CardReservation, existing: Iterable[CardReservation], now: float
) -> CardReservation:
    """`res` as it will be stored (cards in order), or ReservationError."""
    if not res.name or any(ch.isspace() for ch in res.name):
        raise ReservationError(f"invalid name {res.name!r}: one word")
    if not res.cards:
        raise ReservationError("no cards: give --cards NODE:INDEX,...")
    cards = sorted({parse_card(c) for c in res.cards})
    if res.end <= res.start:
        raise ReservationError("--end must come after --start")
    if res.end <= now:
        raise ReservationError("--end is in the past")
    for other in existing:
        if other.name == res.name:
            raise ReservationError(f"reservation {res.name} exists; `nvq reserve rm` it first")
        shared = sorted(card_set(other) & set(cards))
        if shared and other.start < res.end and res.start < other.end:
            where = ",".join(f"{n}:{i}" for n, i in shared)
            raise ReservationError(
                f"{where} already reserved by {other.name} from {stamp(other.start)} "
                f"to {stamp(other.end)}"
            )
    return msgspec.structs.replace(res, cards=[f"{n}:{i}" for n, i in cards])


def choose_cards(
    cards: Mapping[str, Sequence[int]],
    count: int,
    existing: Iterable[CardReservation],
    start: float,
    end: float,
) -> list[str]:
    """`count` cards ("node:index") among `cards` (node → its card indices) that no
    reservation holds over [start, end): whole nodes first (fewest nodes), then by
    node name and index. ReservationError when there are not that many."""
    taken: set[Card] = set()
    for other in existing:
        if other.start < end and start < other.end:
            taken |= card_set(other)
    free = {n: [i for i in sorted(idx) if (n, i) not in taken] for n, idx in cards.items()}
    out: list[str] = []
    # The nodes with the most free cards first: a reservation packs onto few nodes.
    for node in sorted(free, key=lambda n: (-len(free[n]), n)):
        for index in free[node]:
            if len(out) < count:
                out.append(f"{node}:{index}")
    if count < 1 or len(out) < count:
        have = sum(len(v) for v in free.values())
        raise ReservationError(
            f"--gpus {count}: {have} cards are free of other reservations over that window"
        )
    return out


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def live(reservations: Iterable[CardReservation], now: float) -> list[CardReservation]:
    """Those whose window has not ended."""
    return [r for r in reservations if r.end > now]


def closed_to(
    reservations: Sequence[CardReservation], time_limit: float | None, now: float
) -> frozenset[Card]:
    """The cards a job outside any reservation may not start on now: those of a window
    open now, or of one to come that its time limit (None: untimed) would reach."""
    out: set[Card] = set()
    for res in reservations:
        if res.end <= now:
            continue
        if res.start <= now or time_limit is None or now + time_limit > res.start:
            out |= card_set(res)
    return frozenset(out)


def in_window(res: CardReservation | None, now: float) -> bool:
    return res is not None and res.start <= now < res.end


def may_use(res: CardReservation, user: str) -> bool:
    return not res.users or user in res.users


def waiting_for(res: CardReservation | None, name: str, now: float) -> str | None:
    """Why a `--reservation` job cannot start now (None: its window is open)."""
    if res is None:
        return f"reservation {name} no longer exists; `nvq job edit ID --reservation ''` frees it"
    if now < res.start:
        return f"reservation {name} starts at {stamp(res.start)}"
    if now >= res.end:
        return f"reservation {name} ended at {stamp(res.end)}"
    return None


def next_change(reservations: Iterable[CardReservation], now: float) -> float | None:
    """The next start or end to come: what a job may use changes then."""
    times = [t for r in reservations for t in (r.start, r.end) if t > now]
    return min(times, default=None)


def by_name(reservations: Iterable[CardReservation]) -> Mapping[str, CardReservation]:
    return {r.name: r for r in reservations}
