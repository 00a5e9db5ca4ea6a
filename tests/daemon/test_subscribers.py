"""The event fan-out on its own: each subscriber gets every published batch in order,
and one that falls behind is dropped instead of holding up commits."""

from __future__ import annotations

from nvq.daemon.core.subscribers import Subscribers
from nvq.model import Event
from tests.fakes.aio import run


def _events(*ids: int) -> list[Event]:
    return [Event(id=i, time=0.0, kind="k", job_id=None, node=None) for i in ids]


def test_every_subscriber_gets_every_batch_in_order() -> None:
    async def main() -> None:
        subs = Subscribers(limit=10)
        a, b = subs.add(), subs.add()
        subs.publish(_events(1, 2))
        subs.publish(_events(3))
        assert [e.id for e in await a.take()] == [1, 2, 3]
        subs.publish(_events(4))
        assert [e.id for e in await a.take()] == [4]
        assert [e.id for e in await b.take()] == [1, 2, 3, 4]

    run(main)


def test_a_subscriber_past_its_limit_is_dropped_and_others_go_on() -> None:
    async def main() -> None:
        subs = Subscribers(limit=3)
        slow, quick = subs.add(), subs.add()
        subs.publish(_events(1, 2))
        assert [e.id for e in await quick.take()] == [1, 2]
        subs.publish(_events(3, 4))  # slow would hold 4 > 3
        assert slow.overflowed and not quick.overflowed
        assert await slow.take() == []
        assert len(subs) == 1
        subs.publish(_events(5))
        assert [e.id for e in await quick.take()] == [3, 4, 5]

    run(main)


def test_a_removed_subscriber_gets_nothing() -> None:
    async def main() -> None:
        subs = Subscribers()
        sub = subs.add()
        subs.remove(sub)
        subs.publish(_events(1))
        assert not sub.pending and len(subs) == 0

    run(main)
