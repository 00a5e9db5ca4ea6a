"""`job ls` as a window: the flags → a `JobWindow` request, and the page → what is
printed (text with a closing line when jobs were left out; `--json` the list of jobs,
which becomes `{"jobs": [...], "more": true}` only when the window cut it)."""

from __future__ import annotations

import datetime as dt
import time

from nvq import control as c
from nvq.values import parse_duration


def since_point(text: str | None) -> tuple[int | None, float | None]:
    """`--since 1200` (that job and later), `--since 2026-11-30` (a date or date-time,
    local unless it says) or `--since 2h` (submitted in the last two hours)."""
    if text is None:
        return None, None
    if text.isdigit():
        return int(text), None
    try:
        return None, dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        pass
    try:
        return None, time.time() - parse_duration(text, allow_zero=True)
    except ValueError:
        from nvq.cli.params import CliError  # typer-heavy; the fast path never errs here

        raise CliError(
            f"--since {text!r}: expected a job id (1200), a date (2026-11-30), "
            "a date-time or an age (2h)",
            2,
        ) from None


def window_request(
    *,
    states: list[str],
    user: str | None,
    tag: str | None,
    array: int | None,
    since: str | None,
    limit: int | None,
    every: bool,
) -> c.JobWindow:
    if limit is not None and limit < 1:
        from nvq.cli.params import CliError

        raise CliError(f"--limit {limit}: expected at least 1", 2)
    if every and limit is not None:
        from nvq.cli.params import CliError

        raise CliError("give --all or --limit, not both", 2)
    since_id, since_time = since_point(since)
    return c.JobWindow(
        states=states or None,
        user=user,
        tag=tag,
        array=array,
        since_id=since_id,
        since_time=since_time,
        limit=limit,
        all=every,
    )

