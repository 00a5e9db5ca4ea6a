"""`nvq queue drain|resume NODE:IDX`: one card taken out of placement by hand, or
returned (an unhealthy one too, its evidence acknowledged). The mark itself follows
from the event (domain/card_marks.py), in the same transaction."""

from __future__ import annotations

from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import RequestError
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.model import NewEvent, Tx


async def card_flag(state: State, node_name: str, index: int, *, drained: bool,
                    user: str) -> str:
    """Mark or return the card; the node's name."""
    async with locked(state) as held:
        node = state.find_node(node_name)
        card = f"{node.name}:{index}"
        known = [g.index for g in node.hello.gpus] if node.hello is not None else None
        if known is not None and index not in known:
            cards = ", ".join(f"{node.name}:{i}" for i in known) or "none"
            raise RequestError(f"{node.name} has no card {index} (its cards: {cards})")
        mark = node.card_marks.get(index)
        now = {g.index: g.faults for g in node.sample.gpus} if node.sample else {}
        if drained:
            if mark is not None and mark.out:
                return node.name  # already out: nothing to do
            event = NewEvent("card_drained", None, node.name, {"card": index, "by": user})
        else:
            if mark is None or not mark.out:
                raise RequestError(f"card {card} is in service: nothing to resume")
            data = {"card": index, "by": user, "faults": list(now.get(index, []))}
            event = NewEvent("card_resumed", None, node.name, data)
        await held.commit(Tx(events=[event]), Effects(kick=True))
        state.notify()
    return node.name
