"""What an event means to someone watching the stream (`queue events --follow
--kind ...`): the few words an agent filters on, from the event's kind. Pure.

The words are a webhook's `events` (start, end, fail, alert, time-limit-80) plus
`retry` and `node`; `end` here also counts a cancel, since whoever waits for a job to
end wants to hear that it never will."""

from __future__ import annotations

from nvq.domain.alerts import ALERT_KINDS
from nvq.domain.notify_on import TIME_LIMIT_80

# word → what it stands for, as `--help` and the README say it.
CLASSES: dict[str, str] = {
    "start": "a job started",
    "end": "a job reached a final state (completed, failed, timeout, cancelled, lost)",
    "fail": "a job ended badly (failed, timeout, lost, could not launch or place)",
    "alert": "the queue raised an alert (queue alerts)",
    "retry": "a job went back in line (retried, requeued, card failed, reassigned, preempted)",
    "time-limit-80": "a job has run 80 % of its --timeout",
    "node": "a node, card or cluster changed (no job)",
}

# Event kinds that leave a job in a final state → that state. A `job_lost` or
# `job_failed` the queue retries is recorded as `job_retried` instead.
END_STATES: dict[str, str] = {
    "job_completed": "completed",
    "job_failed": "failed",
    "job_timeout": "timeout",
    "job_cancelled": "cancelled",
    "job_lost": "lost",
    "job_unschedulable": "failed",
    "launch_failed": "failed",
    "setup_failed": "failed",
}

_RETRIES = frozenset(
    {"job_retried", "job_requeued", "job_card_failed", "job_reassigned", "job_preempted"}
)


def classes_of(kind: str, job_id: int | None) -> list[str]:
    """The words `kind` answers to, in `CLASSES` order (empty: none of them)."""
    state = END_STATES.get(kind)
    found = {
        "start": kind == "job_started",
        "end": state is not None,
        "fail": state is not None and state not in ("completed", "cancelled"),
        "alert": kind in ALERT_KINDS,
        "retry": kind in _RETRIES,
        "time-limit-80": kind == TIME_LIMIT_80,
        "node": job_id is None,
    }
    return [word for word in CLASSES if found[word]]


def unknown_classes(words: list[str]) -> list[str]:
    return [w for w in words if w not in CLASSES]
