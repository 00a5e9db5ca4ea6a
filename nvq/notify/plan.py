"""What a transition owes the notification channels: pure functions from its alerts
and job outcomes (plus the config) to outbox items, and the retry backoff.

Each item's key is unique in the outbox, so the same alert or job outcome is queued
once per channel however often the transition that causes it is replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvq.config import Config, WebhookChannel
from nvq.domain.notify_on import TIME_LIMIT_80
from nvq.model import SEVERITIES, JobRecord, JobState, NewAlert, NewEvent, OutboxItem

# Event kinds that end a job, and whether that counts as success for e-mail.
OUTCOMES: dict[str, bool] = {
    "job_completed": True,
    "job_failed": False,
    "job_timeout": False,
    "job_lost": False,
    "launch_failed": False,
    "setup_failed": False,
    "job_unschedulable": False,
}


def webhook_name(index: int) -> str:
    """The outbox channel of the index-th `[[notify.webhook]]`: webhook, webhook2, ..."""
    return "webhook" if index == 0 else f"webhook{index + 1}"


def webhook_index(channel: str) -> int:
    rest = channel.removeprefix("webhook")
    return int(rest) - 1 if rest.isdigit() else 0 if not rest else 1 << 30


# Job events a webhook can be told of, by its `events` names.
STARTS = frozenset({"job_started"})


def webhook_channels(config: Config) -> list[tuple[str, WebhookChannel]]:
    return [(webhook_name(i), hook) for i, hook in enumerate(config.notify.webhooks)]


def webhook_job_items(
    events: list[NewEvent], jobs: Mapping[int, JobRecord], config: Config
) -> list[OutboxItem]:
    """A webhook's job items: its `events` (start, end, fail) for its `users`' jobs."""
    items: list[OutboxItem] = []
    for ev in events:
        job = jobs.get(ev.job_id) if ev.job_id is not None else None
        if job is None:
            continue
        success = OUTCOMES.get(ev.kind)
        if ev.kind == "job_failed" and quiet_failure(job) and job.spec.notify_on is None:
            continue
        if ev.kind in STARTS:
            wanted, what = {"start"}, "started"
        elif ev.kind == TIME_LIMIT_80:
            wanted, what = {"time-limit-80"}, "time-limit-80"
        elif success is not None and job.state.finished:
            wanted, what = ({"end"} if success else {"end", "fail"}), str(job.state)
        else:
            continue
        for channel, hook in webhook_channels(config):
            # the job's own --notify-on, else what the webhook listens for
            if not wanted & set(hook.events if job.spec.notify_on is None else job.spec.notify_on):
                continue
            if hook.users and job.user not in hook.users and job.spec.submitter not in hook.users:
                continue
            items.append(
                OutboxItem(
                    channel=channel,
                    key=f"{channel}:job:{job.id}:{job.attempt}:{what}",
                    payload={"type": "job", "job": moment_doc(job, what), "moment": what},
                )
            )
    return items


def quiet_failure(job: JobRecord) -> bool:
    """An interactive session's non-zero exit (bash exits with its last command's
    status) is no failure to tell anyone of, unless the job asked (`--notify-on`)."""
    return job.spec.interactive


# Alerts a webhook's job message of the same failure already says (job, node, exit,
# output tail): a channel that hears both gets the job message only.
SAID_BY_JOB_ITEM = frozenset({"job_failed", "job_timeout"})


def moment_doc(job: JobRecord, what: str) -> dict[str, Any]:
    """The job as it was at the moment told of. `jobs` holds each job as the whole
    batch left it, and a short job's start and end are often committed in one batch:
    its start must still say `running`, not the end it has reached since."""
    doc = job_doc(job)
    if what == "started":
        doc.update(state=str(JobState.RUNNING), exit_code=None, reason=None, ended_at=None,
                   stderr_tail=None)
    return doc


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
    channels += [name for name, hook in webhook_channels(config) if "alert" in hook.events]
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


def job_doc(job: JobRecord) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.spec.name,
        "state": str(job.state),
        "command": job.spec.command,
        "user": job.user,
        "submitter": job.spec.submitter,
        "node": job.node,
        "attempt": job.attempt,
        "exit_code": job.exit_code,
        "reason": job.reason,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "stderr_tail": job.stderr_tail,
        "timeout": job.spec.timeout,
    }


def recipient(job: JobRecord, config: Config) -> list[str]:
    """The submitter's address ([users.NAME] email, by OS user, then by the
    NVQ_SUBMITTER label), else the [notify.email] to list."""
    for name in (job.user, job.spec.submitter):
        user = config.users.get(name)
        if user is not None and user.email:
            return [user.email]
    return list(config.notify.email.to) if config.notify.email else []


def plan(
    alerts: list[NewAlert],
    events: list[NewEvent],
    jobs: Mapping[int, JobRecord],
    config: Config,
    now: float,
) -> list[OutboxItem]:
    items: list[OutboxItem] = []
    threshold = SEVERITIES.index(config.notify.severity)
    channels = alert_channels(config)
    email_to = list(config.notify.email.to) if config.notify.email else []
    job_items = webhook_job_items(events, jobs, config)
    told = {(i.channel, i.payload["job"]["id"], i.payload["job"]["attempt"]) for i in job_items}
    for alert in alerts:
        if SEVERITIES.index(alert.severity) < threshold:
            continue
        doc = {"type": "alert", "alert": alert_doc(alert, now)}
        for channel in channels:
            if alert.kind in SAID_BY_JOB_ITEM and (channel, alert.job_id, alert.attempt) in told:
                continue  # one failure, one message on this channel
            payload = {**doc, "to": email_to} if channel == "email" else doc
            items.append(
                OutboxItem(
                    channel=channel,
                    key=f"{channel}:{alert.key}",
                    payload=payload,
                    alert_key=alert.key,
                )
            )
    items += job_items
    if config.notify.email is None:
        return items
    for ev in events:
        success = OUTCOMES.get(ev.kind)
        job = jobs.get(ev.job_id) if ev.job_id is not None else None
        if success is None or job is None or not job.state.finished:
            continue
        own = job.spec.email_on_success if success else job.spec.email_on_failure
        default = config.notify.email_on_success if success else config.notify.email_on_failure
        if ev.kind == "job_failed" and quiet_failure(job):
            default = False  # only its own --email-on-failure
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
