"""Events as text, one way everywhere (`queue events`, `--follow`, `job show`, the
TUI): the kind in words a user knows, and the data without empty fields."""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fast path renders events without importing typing
    from typing import Any

    from nvq.model import Event

# Kinds whose stored name says how the daemon got there, not what happened.
SHOWN_KINDS = {"job_exit_after_settle": "process_exited"}

# `queue events` and `queue events --follow` print the same columns: fixed widths, so
# a line printed as it happens lines up with the ones printed before it.
HEADER = f"{'ID':>6}  {'TIME':<19}  {'KIND':<20}  {'JOB':<6}  {'NODE':<12}  DATA"


def kind_text(kind: str) -> str:
    return SHOWN_KINDS.get(kind, kind)


# Fields that hold a moment (seconds since the epoch): text shows them as a clock does;
# only JSON carries the number.
MOMENTS = frozenset({"at", "last_seen", "since", "until", "deadline", "time"})


def value_text(key: str, value: object) -> str:
    if (key in MOMENTS or key.endswith("_at")) and isinstance(value, (int, float)) \
            and not isinstance(value, bool) and value > 1e8:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    return str(value)


def data_text(data: dict[str, Any]) -> str:
    """`attempt=1, exit_code=3, ended_at=2026-12-04 23:01:02`: fields with no value
    (None) left out, moments as a clock shows them."""
    return ", ".join(f"{k}={value_text(k, v)}" for k, v in data.items() if v is not None)


def event_row(e: Event) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
    job = str(e.job_id) if e.job_id is not None else "-"
    return (
        f"{e.id:>6}  {when:<19}  {kind_text(e.kind):<20}  {job:<6}  {e.node or '-':<12}  "
        f"{data_text(e.data)}"
    ).rstrip()
