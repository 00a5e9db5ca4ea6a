"""Which transitions are alerts: a pure function from a transaction's events to the
alerts it raises, committed in that same transaction (see `Core._commit`).

An alert's key names the failure itself (kind + job + attempt, or kind + node + the
moment it was last seen), and the table keeps keys unique: a replayed event, a second
pass over the same job, or a restart never raises the same alert twice.

Code that moves jobs (reassignment, preemption, retries) raises its alert by emitting
the event: `alert_event("job_reassigned", job, node, "node n3 went down")`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from nvq.model import JobRecord, NewAlert, NewEvent

# kind → severity. Failures wait for a person; a retry is worth knowing about; a job
# moved by the queue itself is only news.
ALERT_KINDS: dict[str, str] = {
    "job_failed": "error",
    "job_lost": "error",
    "job_timeout": "error",
    "job_held": "warning",  # this job did nothing wrong: a prerequisite of it did
    "job_unschedulable": "error",
    "launch_failed": "error",
    "setup_failed": "error",
    "node_down": "error",
    "node_refused": "error",
    "gpu_unhealthy": "error",  # a card's Xid/ECC/…: it takes no new job  # a host key or login refused: retrying cannot help
    "job_retried": "warning",
    "job_card_failed": "warning",  # requeued, no retry spent; gpu_unhealthy names the card
    "job_reassigned": "info",
    "job_preempted": "info",
    "artifacts_quota": "error",  # a sync refused: checkpoints are no longer kept
    "cluster_refused": "error",  # Slurm refused a pilot: no more requests until retry
}

DETAIL_LIMIT = 4000  # characters of stderr kept on an alert (the job keeps its own tail)


def alert_event(kind: str, job: JobRecord, node: str | None, reason: str, **data: Any) -> NewEvent:
    """The event that records `kind` for `job`'s current attempt, shaped as `derive`
    reads it. For code outside this module that moves jobs (retry, reassign, preempt)."""
    if kind not in ALERT_KINDS:
        raise ValueError(f"{kind} is not an alert kind ({', '.join(ALERT_KINDS)})")
    return NewEvent(kind, job.id, node, {"attempt": job.attempt, "reason": reason, **data})


def derive(events: list[NewEvent], jobs: Mapping[int, JobRecord]) -> list[NewAlert]:
    """The alerts a transition raises. `jobs` holds the transaction's updated jobs (the
    state the event left them in)."""
    out: list[NewAlert] = []
    for ev in events:
        severity = ALERT_KINDS.get(ev.kind)
        if severity is None:
            continue
        job = jobs.get(ev.job_id) if ev.job_id is not None else None
        if ev.kind == "job_failed" and job is not None and job.spec.interactive:
            continue  # a shell left with a non-zero status (its last command's) is no failure
        out.append(_alert(ev, severity, job))
    return out


def _alert(ev: NewEvent, severity: str, job: JobRecord | None) -> NewAlert:
    data = ev.data
    if ev.job_id is None and ev.kind == "cluster_refused":
        # Once per message: the same refusal after a restart or retry is the same alert.
        return NewAlert(
            kind=ev.kind,
            severity=severity,
            key=f"{ev.kind}:cluster:{ev.node}:{data.get('message')}",
            message=str(data.get("message")),
            node=ev.node,
        )
    if ev.job_id is None and ev.kind == "gpu_unhealthy":
        # Once per card and evidence: the same fault seen again is the same alert.
        card = f"{ev.node}:{data.get('card')}"
        evidence = "; ".join(map(str, data.get("faults") or []))
        return NewAlert(
            kind=ev.kind,
            severity=severity,
            key=f"{ev.kind}:{card}:{evidence}",
            message=f"card {card} is unhealthy ({evidence}); it takes no new job",
            node=ev.node,
        )
    if ev.job_id is None and ev.kind == "node_refused":
        # Once per outage and message; the message names the node and the fix.
        error = str(data.get("error"))
        return NewAlert(
            kind=ev.kind,
            severity=severity,
            key=f"{ev.kind}:node:{ev.node}:{data.get('last_seen')}:{error}",
            message=error,
            node=ev.node,
        )
    if ev.job_id is None:
        # node_down: once per outage, named by when the node was last heard from.
        since = data.get("last_seen")
        error = data.get("error") or "unreachable"
        return NewAlert(
            kind=ev.kind,
            severity=severity,
            key=f"{ev.kind}:node:{ev.node}:{since}",
            message=f"node {ev.node} is down: {error}",
            node=ev.node,
        )
    attempt = int(data.get("attempt") or (job.attempt if job else 0))
    extra = f":{data['after']}" if ev.kind == "job_held" else ""
    label = f"job {ev.job_id}" + (f" ({job.spec.name})" if job else "")
    # A job moved off a node was on it; every other happening was on its node.
    where = f" {'from' if ev.kind == 'job_reassigned' else 'on'} {ev.node}" if ev.node else ""
    detail: str | None = None
    if ev.kind in ("job_failed", "job_timeout"):
        why = job.reason if job and job.reason else ev.kind.removeprefix("job_")
        message = f"{label} {'failed' if ev.kind == 'job_failed' else 'timed out'}{where}: {why}"
        detail = _clip(job.stderr_tail if job else None)
    elif ev.kind == "job_lost":
        message = f"{label} was lost{where}: {data.get('reason', 'its process vanished')}"
    elif ev.kind in ("launch_failed", "setup_failed"):
        error = str(data.get("error", ""))
        message = f"{label} could not start{where}: {error.splitlines()[0] if error else ''}"
        detail = _clip("\n".join(error.splitlines()[1:]) or None)
    elif ev.kind == "job_held":
        message = (
            f"{label} is held: prerequisite {data.get('after')} ended {data.get('state')}; "
            "release, edit or cancel it"
        )
    elif ev.kind == "job_unschedulable":
        message = f"{label} is unschedulable: {data.get('reason', '')}"
    elif ev.kind == "job_retried":
        message = (
            f"{label} is retried ({data.get('retry', '?')} of {data.get('of', '?')}) after "
            f"attempt {attempt}{where}: {data.get('reason', '')}"
        )
    else:
        verb = {"job_reassigned": "was reassigned", "job_preempted": "was preempted",
                "job_card_failed": "was requeued (no retry spent)"}
        message = f"{label} {verb.get(ev.kind, ev.kind)}{where}: {data.get('reason', '')}"
    return NewAlert(
        kind=ev.kind,
        severity=severity,
        key=f"{ev.kind}:job:{ev.job_id}:{attempt}{extra}",
        message=message.rstrip(": "),
        job_id=ev.job_id,
        node=ev.node,
        attempt=attempt,
        detail=detail,
    )


# What a job's completion settles: every way an earlier attempt of it went wrong.
_SETTLED_BY_COMPLETION = (
    "job_failed",
    "job_timeout",
    "job_lost",
    "launch_failed",
    "setup_failed",
    "job_unschedulable",
    "job_held",
    "job_retried",
    "job_card_failed",
)


class Resolution(NamedTuple):
    """Open alerts that are over: of these kinds, about this job or this node."""

    kinds: tuple[str, ...]
    job_id: int | None
    node: str | None
    why: str
    key_prefix: str = ""  # only alerts whose key starts so (one card of a node)


def resolutions(events: list[NewEvent]) -> list[Resolution]:
    """The open alerts a transaction's events settle: a job that completes (after a
    requeue or a retry) settles its failures; a node that is back settles its outage.
    They stay in the history (`queue alerts --all`), out of the open list."""
    out: list[Resolution] = []
    for ev in events:
        if ev.kind == "job_completed" and ev.job_id is not None:
            why = f"resolved: job {ev.job_id} completed"
            out.append(Resolution(_SETTLED_BY_COMPLETION, ev.job_id, None, why))
        elif ev.kind == "node_up" and ev.node is not None:
            back = f"resolved: {ev.node} is back"
            out.append(Resolution(("node_down", "node_refused"), None, ev.node, back))
        elif ev.kind == "card_resumed" and ev.node is not None:
            card = f"{ev.node}:{(ev.data or {}).get('card')}"
            why = f"resolved: {card} returned by {(ev.data or {}).get('by')}"
            out.append(Resolution(("gpu_unhealthy",), None, ev.node, why, f"gpu_unhealthy:{card}:"))
    return out


def _clip(text: str | None) -> str | None:
    if not text:
        return None
    return text if len(text) <= DETAIL_LIMIT else "…" + text[-DETAIL_LIMIT:]


def disk_full_alert(since: float, until: float) -> NewAlert:
    """Writes went through again after the queue host's disk was full from `since` to
    `until`: said once, keyed by the spell."""
    when = time.strftime("%H:%M:%S", time.localtime(since))
    return NewAlert(
        kind="disk_full",
        severity="error",
        key=f"disk_full:{since}",
        message=(
            f"disk full on the queue host from {when} for {until - since:.0f}s; "
            "space is back and every change that waited for it is recorded"
        ),
    )
