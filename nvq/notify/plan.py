"""What a transition owes the notification channels: pure functions from its alerts
and job outcomes (plus the config) to outbox items, and the retry backoff.

Each item's key is unique in the outbox, so the same alert or job outcome is queued
once per channel however often the transition that causes it is replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvq.config import Config
from nvq.model import SEVERITIES, Job, NewAlert, NewEvent, OutboxItem

# Event kinds that end a job, and whether that counts as success for e-mail.
OUTCOMES: dict[str, bool] = {
    "job_completed": True,
    "job_failed": False,
    "job_timeout": False,
    "job_lost": False,
    "launch_failed": False,
    "job_unschedulable": False,
}


def alert_channels(config: Config) -> list[str]:
    notify = config.notify
    channels: list[str] = []
    if notify.email is not None and notify.email.alerts and notify.email.to:
        channels.append("email")
    if notify.command:
        channels.append("command")
    if notify.file is not None:
        channels.append("file")
    if notify.desktop:
        channels.append("desktop")
    return channels


def alert_doc(alert: NewAlert, now: float) -> dict[str, Any]:
    return {
        "kind": alert.kind,
        "severity": alert.severity,
        "message": alert.message,
        "job_id": alert.job_id,
        "node": alert.node,
        "attempt": alert.attempt,
        "detail": alert.detail,
        "time": now,
    }


def job_doc(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "state": str(job.state),
        "command": job.command,
        "user": job.user,
        "submitter": job.submitter,
        "node": job.node,
        "attempt": job.attempt,
        "exit_code": job.exit_code,
        "reason": job.reason,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "stderr_tail": job.stderr_tail,
    }


def recipient(job: Job, config: Config) -> list[str]:
    """The submitter's address ([users.NAME] email, by OS user, then by the
    NVQ_SUBMITTER label), else the [notify.email] to list."""
    for name in (job.user, job.submitter):
        user = config.users.get(name)
        if user is not None and user.email:
            return [user.email]
    return list(config.notify.email.to) if config.notify.email else []


def plan(
    alerts: list[NewAlert],
    events: list[NewEvent],
    jobs: Mapping[int, Job],
    config: Config,
    now: float,
) -> list[OutboxItem]:
    items: list[OutboxItem] = []
    threshold = SEVERITIES.index(config.notify.severity)
    channels = alert_channels(config)
    email_to = list(config.notify.email.to) if config.notify.email else []
    for alert in alerts:
        if SEVERITIES.index(alert.severity) < threshold:
            continue
        doc = {"type": "alert", "alert": alert_doc(alert, now)}
        for channel in channels:
            payload = {**doc, "to": email_to} if channel == "email" else doc
            items.append(
                OutboxItem(
                    channel=channel,
                    key=f"{channel}:{alert.key}",
                    payload=payload,
                    alert_key=alert.key,
                )
            )
    if config.notify.email is None:
        return items
    for ev in events:
        success = OUTCOMES.get(ev.kind)
        job = jobs.get(ev.job_id) if ev.job_id is not None else None
        if success is None or job is None or not job.state.finished:
            continue
        own = job.email_on_success if success else job.email_on_failure
        default = config.notify.email_on_success if success else config.notify.email_on_failure
        if not (default if own is None else own):
            continue
        to = recipient(job, config)
        if not to:
            continue
        items.append(
            OutboxItem(
                channel="email",
                key=f"email:job:{job.id}:{job.attempt}:{job.state}",
                payload={"type": "job", "job": job_doc(job), "to": to},
            )
        )
    return items


def backoff(attempts: int, initial: float, maximum: float) -> float:
    """Seconds before retrying a delivery that has failed `attempts` times."""
    return float(min(maximum, initial * 2 ** max(0, attempts - 1)))
