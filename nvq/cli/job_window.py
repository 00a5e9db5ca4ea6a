"""`job ls` as a window: the flags → a `JobWindow` request (as the plain wire sends it:
a dict, so that the fast path builds it without msgspec), and the page → what is
printed (text with a closing line when jobs were left out; `--json` the list of jobs,
which becomes `{"jobs": [...], "more": true}` only when the window cut it)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself costs the fast path's calls
    from typing import Any


def since_point(text: str | None) -> tuple[int | None, float | None]:
    """`--since 1200` (that job and later), `--since 2026-11-30` (a date or date-time,
    local unless it says) or `--since 2h` (submitted in the last two hours)."""
    if text is None:
        return None, None
    if text.isdigit():
        return int(text), None
    import datetime as dt
    import time

    from nvq.values import parse_duration

    try:
        return None, dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        pass
    try:
        return None, time.time() - parse_duration(text, allow_zero=True)
    except ValueError:
        raise _bad(
            f"--since {text!r}: expected a job id (1200), a date (2026-11-30), "
            "a date-time or an age (2h)"
        ) from None


def window_request(
    *,
    states: list[str] | None = None,
    held: bool = False,
    user: str | None = None,
    mine: bool = False,
    tag: str | None = None,
    array: int | None = None,
    since: str | None = None,
    limit: int | None = None,
    every: bool = False,
    active: bool = False,
) -> dict[str, Any]:
    """The `JobWindow` request's fields (`nvq.control.JobWindow`, without its type);
    `held` is one more state asked for."""
    if limit is not None and limit < 1:
        raise _bad(f"--limit {limit}: expected at least 1")
    if every and limit is not None:
        raise _bad("give --all or --limit, not both")
    if mine and user is not None:
        raise _bad("give --user NAME or --mine, not both")
    since_id, since_time = since_point(since)
    return {
        "states": [*(states or []), "held"] if held else states or None,
        "active": active,
        "user": user,
        "mine": mine,
        "tag": tag,
        "array": array,
        "since_id": since_id,
        "since_time": since_time,
        "limit": limit,
        "all": every,
    }


def _bad(message: str) -> Exception:
    from nvq.client.errors import ClientError

    return ClientError(message, 2)
