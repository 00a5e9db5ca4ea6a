"""Reading the daemon's answer: the final `Done` (its error raised), typed."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from nvq import control as c
from nvq.client.errors import ClientError

T = TypeVar("T")


def typed(done: c.Done, kind: type[T]) -> T:
    try:
        return msgspec.convert(done.data, kind)
    except msgspec.ValidationError as exc:
        raise ClientError(f"unexpected reply from the daemon: {exc}") from None


def answer_of(reply: c.Reply) -> c.Done:
    """The final `Done`, or the error it carries raised as a ClientError."""
    assert isinstance(reply, c.Done)
    if reply.error is not None:
        raise ClientError(reply.error, reply.exit_code or 1)
    return reply


def fell_behind(reply: c.Reply) -> int | None:
    """The id to subscribe again from, when a subscription's `Done` says it fell behind."""
    if isinstance(reply, c.Done) and isinstance(reply.data, dict):
        last = reply.data.get("fell_behind")
        if isinstance(last, int):
            return last
    return None


__all__ = ["answer_of", "fell_behind", "typed"]
