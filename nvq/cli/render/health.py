"""`nvq node health`: each card's health from the node views, as rows and as text."""

from __future__ import annotations

import time

from nvq.cli.render.fields import Fields
from nvq.cli.render.table import table

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the node views come as dicts (fields.py)
    from collections.abc import Sequence

    from nvq.cli.json_shapes import CardHealth
    from nvq.model import NodeView


def card_health(views: Sequence[NodeView]) -> list[CardHealth]:
    """One row a card, its keys in `CardHealth`'s order (nvq.cli.json_shapes, the
    schema of `node health --json`)."""
    return [
        Fields(  # type: ignore[misc]
            card=f"{v.name}:{g.index}", node=v.name, index=g.index, name=g.name,
            health=g.health, faults=list(g.faults), since=g.health_since, by=g.health_by,
            schedulable=g.schedulable,
        )
        for v in views
        for g in v.gpus
    ]


def _since(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "-"


def health_text(cards: Sequence[CardHealth]) -> str:
    if not cards:
        return "no cards (no node has reported its GPUs yet)"
    rows = [
        [
            c.card,
            c.name,
            c.health + (f" by {c.by}" if c.by and c.health == "drained" else ""),
            _since(c.since) if c.health != "ok" else "-",
            "; ".join(c.faults) or "-",
        ]
        for c in cards
    ]
    out = table(["CARD", "NAME", "HEALTH", "SINCE", "EVIDENCE"], rows)
    if any(c.health != "ok" for c in cards):
        out += "\n(an admin returns a card with `nvq queue resume NODE:IDX`)"
    return out
