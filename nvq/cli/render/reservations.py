"""`nvq reserve` as text: one line a reservation."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.domain.reservations import CardReservation


def line(res: CardReservation) -> str:
    from nvq.domain.reservations import stamp

    who = ",".join(res.users) or "anyone"
    note = f"  {res.note}" if res.note else ""
    return (
        f"{res.name:<12} {','.join(res.cards):<20} {stamp(res.start)} → {stamp(res.end)}  "
        f"{who}{note}"
    )
