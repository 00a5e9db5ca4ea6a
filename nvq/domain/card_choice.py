"""Which of a node's fitting cards a job takes: quiet ones before cards busy with work
the queue did not start (a 4 GiB job on a card at 95 % utilisation is legal by memory
and slow in fact). Pure; placement.py calls it only on nodes that have a busy card, so
a cluster without foreign work is placed exactly as by memory alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

# Below this utilisation (%) a card counts as quiet: sampling noise and a desktop's
# compositor must not reorder cards that are, in effect, idle.
QUIET_BELOW = 20

Card = tuple[int, int]  # (−free MiB, index), in placement's order: most free first


def busyness(util: int) -> int:
    """0 for a quiet card, else its utilisation: the least busy comes first."""
    return 0 if util < QUIET_BELOW else util


def pick(cards: Sequence[Card], gpus: int, vram_mb: int, busy: Mapping[int, int]) -> list[Card]:
    """The `gpus` cards to take among `cards` (in placement's order: most free, then
    fewest queue jobs, then lower index), each with free ≥ `vram_mb`: quiet ones first,
    in that order, then the least busy. `busy`: card index → utilisation of its busy
    cards only."""
    quiet_ones: list[Card] = []
    busy_ones: list[Card] = []
    for card in cards:  # most free first: the fitting cards are a prefix
        if -card[0] < vram_mb:
            break
        if card[1] not in busy:
            quiet_ones.append(card)
            if len(quiet_ones) == gpus:
                return quiet_ones
        else:
            busy_ones.append(card)
    busy_ones.sort(key=lambda c: (busyness(busy[c[1]]), c))
    return quiet_ones + busy_ones[:gpus - len(quiet_ones)]


def quiet(cards: Sequence[Card], busy: Mapping[int, int], gpus: int, vram_mb: int) -> bool:
    """The cards a node would give such a job (`pick`) are all quiet: a node that could
    give only busy ones yields to the next that fits with quiet ones."""
    if not busy or not gpus:
        return True
    found = 0
    for neg, index in cards:  # most free first: stop at the first that does not fit
        if -neg < vram_mb:
            return False
        if index not in busy:
            found += 1
            if found == gpus:
                return True
    return False


def busy_note(node: str, picked: Sequence[int], busy: Mapping[int, int]) -> str:
    """What `job show` says of a job that had to take a busy card ("" when none)."""
    taken = [f"{node}:{i} ({busy[i]} % busy)" for i in picked if i in busy]
    if not taken:
        return ""
    return (f"placed on {', '.join(taken)} with work the queue did not start: "
            f"the only {'card' if len(taken) == 1 else 'cards'} with room")


def first(items: Sequence[T]) -> T | None:
    return items[0] if items else None
