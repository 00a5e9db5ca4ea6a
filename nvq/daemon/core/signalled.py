"""A runner sent a job its `--signal` ahead of its timeout (`JobSignalled`, journaled):
recorded as the event `job_signalled`, applied exactly once as every journaled event
is (`nvq.daemon.core.journaled`: the node's seq commits with it)."""

from __future__ import annotations

import signal

from nvq.model import NewEvent
from nvq_runner import protocol as p

KIND = "job_signalled"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def event_of(ev: p.JobSignalled, node: str) -> NewEvent:
    return NewEvent(KIND, ev.job_id, node, {
        "attempt": ev.attempt, "signal": signal_name(ev.signal), "end_at": ev.end_at,
        "why": "timeout",
    })
