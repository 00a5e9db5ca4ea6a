"""`job result` as text: a payload as compact JSON, or that there is none yet."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fast path renders through here: typing costs its calls
    from typing import Any


def result_text(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode() if value is not None else "(no result)"
