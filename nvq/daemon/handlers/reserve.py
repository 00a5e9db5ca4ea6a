"""`nvq reserve add|ls|rm`: cards set aside for some users over a window
(`nvq.daemon.placement.reserving`)."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.placement import reserving
from nvq.domain.reservations import CardReservation


async def reserve_add(ctx: Context, req: c.ReserveAdd, user: str) -> CardReservation:
    asked = CardReservation(
        name=req.name,
        cards=list(req.cards),
        start=req.start,
        end=req.end,
        users=list(req.users),
        note=req.note,
    )
    return await reserving.add(ctx.state, asked, user, gpus=req.gpus, nodes=req.nodes)


async def reserve_list(ctx: Context, req: c.ReserveList, user: str) -> list[CardReservation]:
    return reserving.listing(ctx.state)


async def reserve_remove(ctx: Context, req: c.ReserveRemove, user: str) -> CardReservation:
    return await reserving.remove(ctx.state, req.name, user)
