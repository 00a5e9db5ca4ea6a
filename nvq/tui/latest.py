"""The id of the newest event, found without reading the whole log: one-row reads,
galloping then halving (event ids only grow)."""

from __future__ import annotations

from nvq.client.asynchronous import AsyncClient


async def _any_after(client: AsyncClient, id: int) -> bool:
    return bool(await client.events(id, limit=1))


async def latest_event_id(client: AsyncClient) -> int:
    """The largest event id (0: no events yet): the smallest `x` with no event after
    it. About 2·log2(id) requests of one row each."""
    if not await _any_after(client, 0):
        return 0
    low, high = 0, 1  # an event after low; find a high with none after it
    while await _any_after(client, high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        if await _any_after(client, mid):
            low = mid
        else:
            high = mid
    return high
