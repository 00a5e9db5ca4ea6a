"""Cards out of placement, kept in queue.db (the meta table, key `card_marks`) so they
stay out after the fault stops being reported and across daemon restarts. Pure:
the marks follow from the events a transaction commits.

* `gpu_unhealthy` (the runner reported faults, in a sample or with a job's exit):
  the card is `unhealthy` until an admin returns it. Evidence the admin returned it
  despite (`acked`) does not take it out again: NVML keeps an Xid for the runner's
  lifetime, so a returned card goes on reporting it.
* `card_drained` (`nvq queue drain NODE:IDX`): `drained` by hand.
* `card_resumed` (`nvq queue resume NODE:IDX`): back in service; its evidence so far
  is acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from nvq.model import NewEvent

META_KEY = "card_marks"
KINDS = frozenset({"gpu_unhealthy", "card_drained", "card_resumed"})


class CardMark(msgspec.Struct, kw_only=True):
    state: str  # "unhealthy" | "drained" | "ok" (in service, with evidence acked)
    since: float = 0.0  # when it left placement (or came back)
    faults: list[str] = []  # the evidence that took it out
    by: str | None = None  # who drained or returned it by hand
    acked: list[str] = []  # evidence an admin returned it despite

    @property
    def out(self) -> bool:
        return self.state != "ok"


Marks = dict[str, CardMark]  # "node:index" → mark


def card_key(node: str, index: int) -> str:
    return f"{node}:{index}"


def parse_card(text: str) -> tuple[str, int] | None:
    """`gpu1:2` as ("gpu1", 2); None when `text` does not name a card."""
    node, sep, index = text.rpartition(":")
    if not sep or not node or not index.isdigit():
        return None
    return node, int(index)


def apply(marks: Mapping[str, CardMark], events: Iterable[NewEvent], now: float) -> Marks | None:
    """The marks after `events`; None when they change nothing."""
    out = dict(marks)
    changed = False
    for ev in events:
        if ev.kind not in KINDS or ev.node is None:
            continue
        data = ev.data or {}
        key = card_key(ev.node, int(data.get("card", -1)))
        old = out.get(key)
        if ev.kind == "gpu_unhealthy":
            acked = old.acked if old is not None else []
            new = [str(f) for f in data.get("faults") or [] if f not in acked]
            if not new:
                continue
            if old is not None and old.out:
                faults = list(dict.fromkeys([*old.faults, *new]))
                if faults == old.faults:
                    continue
                mark = msgspec.structs.replace(old, faults=faults)
            else:
                mark = CardMark(state="unhealthy", since=now, faults=new, acked=acked)
        elif ev.kind == "card_drained":
            if old is not None and old.out:
                continue
            mark = CardMark(state="drained", since=now, by=data.get("by"),
                            acked=old.acked if old else [])
        else:
            if old is None or not old.out:
                continue
            seen = [str(f) for f in data.get("faults") or []]  # reported at that moment
            acked = list(dict.fromkeys([*old.acked, *old.faults, *seen]))
            mark = CardMark(state="ok", since=now, by=data.get("by"), acked=acked)
        out[key] = mark
        changed = True
    return out if changed else None


def of_node(marks: Mapping[str, CardMark], node: str) -> dict[int, CardMark]:
    """The node's marked cards, by index."""
    out: dict[int, CardMark] = {}
    for key, mark in marks.items():
        parsed = parse_card(key)
        if parsed is not None and parsed[0] == node:
            out[parsed[1]] = mark
    return out


def unacked(mark: CardMark | None, faults: list[str]) -> list[str]:
    """Of the faults a sample reports for a card, those no admin returned it despite."""
    return [f for f in faults if mark is None or f not in mark.acked]


_enc = msgspec.json.Encoder()


def encode(marks: Mapping[str, CardMark]) -> str:
    return _enc.encode(dict(marks)).decode()


def decode(text: str | None) -> Marks:
    if not text:
        return {}
    try:
        return msgspec.json.decode(text, type=Marks)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}  # a damaged record: every card in service (their runners say more)
