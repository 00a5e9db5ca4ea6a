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

Card = tuple[int, int]  # (−free MiB, index): placement's order, most free first


def busyness(util: int) -> int:
    """0 for a quiet card, else its utilisation: the least busy comes first."""
    return 0 if util < QUIET_BELOW else util


def pick(cards: Sequence[Card], gpus: int, vram_mb: int, busy: Mapping[int, int]) -> list[Card]:
    """The `gpus` cards to take among `cards` (most free first), each with free ≥
    `vram_mb`: quiet ones first (most free, then lower index, as by memory alone),
    then the least busy. `busy`: card index → utilisation of its busy cards only."""
    fitting = [c for c in cards if -c[0] >= vram_mb]
    if not busy:
        return fitting[:gpus]
    return sorted(fitting, key=lambda c: (busyness(busy.get(c[1], 0)), c))[:gpus]


def quiet(cards: Sequence[Card], busy: Mapping[int, int], gpus: int, vram_mb: int) -> bool:
    """The cards a node would give such a job (`pick`) are all quiet: a node that could
    give only busy ones yields to the next that fits with quiet ones."""
    if not busy or not gpus:
        return True
    return not any(index in busy for _, index in pick(cards, gpus, vram_mb, busy))


def busy_note(node: str, picked: Sequence[int], busy: Mapping[int, int]) -> str:
    """What `job show` says of a job that had to take a busy card ("" when none)."""
    taken = [f"{node}:{i} ({busy[i]} % busy)" for i in picked if i in busy]
    if not taken:
        return ""
    return (f"placed on {', '.join(taken)} with work the queue did not start: "
            f"the only {'card' if len(taken) == 1 else 'cards'} with room")


def first(items: Sequence[T]) -> T | None:
    return items[0] if items else None
