"""Reservations in the daemon (`nvq reserve add|ls|rm`, `--reservation`): kept in
`queue.db` and in memory (`State.reservations`); the placement pass asks here which
cards each job may use, which `--reservation` jobs may start now, and when that next
changes (a timer on its loop). Rules: `nvq.domain.reservations`."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.daemon.placement.memory import Memory
from nvq.domain import reservations as rsv
from nvq.domain.reservations import CardReservation
from nvq.model import JobRecord, JobSpec, NewEvent, NodeView, Tx
from nvq.store import reservations as table


async def add(
    state: State, res: CardReservation, user: str, *, gpus: int = 0, nodes: Sequence[str] = ()
) -> CardReservation:
    """Store `res`; with `gpus`, its cards are that many free ones on `nodes`."""
    now = time.time()
    async with locked(state) as held:
        if gpus:
            res = msgspec.structs.replace(res, cards=_pick(state, res, gpus, nodes))
        cards = []
        for text in res.cards:
            try:
                node_name, index = rsv.parse_card(text)
            except rsv.ReservationError as exc:
                raise BadRequest(str(exc)) from None
            node = state.find_node(node_name)  # a unique prefix names it too
            known = {g.index for g in node.hello.gpus} if node.hello is not None else None
            if known is not None and index not in known:
                raise BadRequest(f"{node.name} has no card {index}")
            cards.append(f"{node.name}:{index}")
        asked = CardReservation(
            name=res.name,
            cards=cards,
            start=res.start,
            end=res.end,
            users=sorted(set(res.users)),
            note=res.note,
            created_by=user,
            created_at=now,
        )
        try:
            made = rsv.check_new(asked, state.reservations.values(), now)
        except rsv.ReservationError as exc:
            raise BadRequest(str(exc)) from None
        await state.store.write(lambda c: table.put(c, made))
        state.reservations[made.name] = made
        data = {"name": made.name, "cards": made.cards, "start": made.start, "end": made.end}
        event = NewEvent("reservation_added", None, None, data)
        await held.commit(Tx(events=[event]), Effects(kick=True))
    return made


def _pick(state: State, res: CardReservation, gpus: int, nodes: Sequence[str]) -> list[str]:
    known = {
        n.name: [g.index for g in n.hello.gpus]
        for n in state.nodes.values()
        if n.hello is not None and not n.ignored
        and (not nodes or any(n.name.startswith(prefix) for prefix in nodes))
    }
    try:
        return rsv.choose_cards(known, gpus, state.reservations.values(), res.start, res.end)
    except rsv.ReservationError as exc:
        raise BadRequest(str(exc)) from None


async def remove(state: State, name: str, user: str) -> CardReservation:
    async with locked(state) as held:
        res = state.reservations.get(name)
        if res is None:
            raise BadRequest(f"no reservation named {name!r}")
        await state.store.write(lambda c: table.remove(c, name))
        del state.reservations[name]
        data = {"name": name, "by": user}
        event = NewEvent("reservation_removed", None, None, data)
        await held.commit(Tx(events=[event]), Effects(kick=True))
    return res


def listing(state: State) -> list[CardReservation]:
    return sorted(state.reservations.values(), key=lambda r: (r.start, r.name))


def check_spec(state: State, spec: JobSpec, user: str) -> None:
    """Refuse a submit (or edit) into a reservation that does not exist, has ended or
    does not list the user."""
    if not spec.reservation:
        return
    res = state.reservations.get(spec.reservation)
    if res is None:
        raise BadRequest(f"--reservation: no reservation named {spec.reservation!r}")
    if res.end <= time.time():
        raise BadRequest(f"--reservation: {res.name} ended at {rsv.stamp(res.end)}")
    if not rsv.may_use(res, user):
        raise BadRequest(f"--reservation: {res.name} is for {', '.join(res.users)}, not {user}")


def restriction(state: State, job: JobRecord, time_limit: float | None, now: float) -> dict[str, object]:
    """PendingJob's `only`/`closed` for `job` (empty: no reservation concerns it)."""
    if not state.reservations:
        return {}
    live = rsv.live(state.reservations.values(), now)
    if job.spec.reservation is not None:
        res = state.reservations.get(job.spec.reservation)
        if res is not None:
            mine = rsv.card_set(res)
            others = [r for r in live if r.name != res.name]
            return {"only": mine, "closed": rsv.closed_to(others, time_limit, now) - mine}
    closed = rsv.closed_to(live, time_limit, now)
    return {"closed": closed} if closed else {}


def admitted(
    state: State, memory: Memory, jobs: Sequence[JobRecord], now: float
) -> list[JobRecord]:
    """The jobs that may start now: a `--reservation` job only in its window. Sets the
    loop's timer to the next start or end of a reservation."""
    if not state.reservations:
        return list(jobs)
    memory.reservations_change_at = rsv.next_change(state.reservations.values(), now)
    return [
        j
        for j in jobs
        if j.spec.reservation is None or rsv.in_window(state.reservations.get(j.spec.reservation), now)
    ]


def waiting_reason(state: State, job: JobRecord, now: float) -> str | None:
    """Why a `--reservation` job is left out of the pass (None: it is not)."""
    if job.spec.reservation is None:
        return None
    return rsv.waiting_for(state.reservations.get(job.spec.reservation), job.spec.reservation, now)


def mark_cards(state: State, views: Sequence[NodeView]) -> None:
    """Name on each card the live reservation holding it (the earliest to start)."""
    if not state.reservations:
        return
    marks: dict[tuple[str, int], str] = {}
    for res in sorted(rsv.live(state.reservations.values(), time.time()), key=lambda r: -r.start):
        for card in rsv.card_set(res):
            marks[card] = res.name
    for view in views:
        for gpu in view.gpus:
            gpu.reservation = marks.get((view.name, gpu.index))
