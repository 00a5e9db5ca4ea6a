"""`nvq reserve add|ls|rm`: cards set aside for some users over a window
(`nvq.daemon.placement.reserving`)."""

from __future__ import annotations

from nvq import control as c
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.registry import handles
from nvq.daemon.placement import reserving
from nvq.domain.permissions import ANYONE, admin
from nvq.domain.reservations import CardReservation


@handles(c.ReserveAdd, may=admin("reserve cards"))
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


@handles(c.ReserveList, may=ANYONE)
async def reserve_list(ctx: Context, req: c.ReserveList, user: str) -> list[CardReservation]:
    return reserving.listing(ctx.state)


@handles(c.ReserveRemove, may=admin("remove a reservation"))
async def reserve_remove(ctx: Context, req: c.ReserveRemove, user: str) -> CardReservation:
    return await reserving.remove(ctx.state, req.name, user)
