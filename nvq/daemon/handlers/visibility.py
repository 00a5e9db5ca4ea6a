"""What a reply shows of other users' jobs (see nvq.domain.permissions): a member who
is neither the job's owner nor an admin sees its metadata only (`[queue] members_read =
"metadata"`, the default) — its environment's values, output, result and files are
blanked — or, with `members_read = "all"`, everything but secret-looking values, which
no `--reveal` of theirs can bring back: they never leave the daemon.

Applied once, at the control server, to every reply and every event page, so no
handler can forget it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from nvq.domain.attempts import Attempt
from nvq.domain.permissions import may_read_private
from nvq.model import Alert, Event, Job
from nvq.world.secret_names import MASK, masked

# What a job holds of its owner's beyond what `squeue` shows, and the value that
# stands in for it. The environment keeps its names (what a job was given is
# metadata); their values are the owner's.
_BLANK: dict[str, Any] = {
    "result": None,
    "result_error": None,
    "stderr_tail": None,
    "stderr_tail_stream": None,
    "progress": None,
    "written": [],
    "env_dropped": [],
}
_ENVS = ("env", "env_captured")
# Keys of an event's data (at any depth) that carry private values: a `job_changed`
# of `env` has its before and after.
_PRIVATE_KEYS = frozenset({*_ENVS, *_BLANK, "logs"})
# Keys of `job show`'s document that are the job's output, not its record.
_SHOW_PRIVATE = ("logs", "artifact_syncs", "artifact_notes")


@dataclass(frozen=True)
class Viewer:
    user: str
    admins: frozenset[str]
    members_read: str = "metadata"

    def owns(self, job_user: str) -> bool:
        """May see `job_user`'s job in full (secrets included, with --reveal)."""
        return job_user == self.user or self.user in self.admins

    def reads(self, job_user: str) -> bool:
        return may_read_private(job_user, self.user, self.admins, self.members_read)


def _blank_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if env is None else dict.fromkeys(env, MASK)


def _job_fields(get: Any, viewer: Viewer) -> dict[str, Any]:
    """The replacements for one job's private fields (`get(name)` reads a field)."""
    fix: dict[str, Any] = {}
    if viewer.owns(get("user")):
        return fix
    if viewer.reads(get("user")):
        for name in _ENVS:
            env = get(name)
            if isinstance(env, dict):
                shown = masked(env)
                if shown != env:
                    fix[name] = shown
        return fix
    for name in _ENVS:
        env = get(name)
        if isinstance(env, dict) and env:
            fix[name] = _blank_env(env)
    for name, blank in _BLANK.items():
        if get(name) not in (None, [], blank):
            fix[name] = blank
    return fix


def _scrub(value: Any) -> Any:
    """An event's data with every private key's value masked, at any depth."""
    if isinstance(value, dict):
        return {k: MASK if k in _PRIVATE_KEYS else _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _has_private(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in _PRIVATE_KEYS or _has_private(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_private(v) for v in value)
    return False


def event_job_ids(data: Any) -> set[int]:
    """The jobs of the events in `data` whose data holds something private, and of the
    alerts with a detail (a failed job's output tail): the only ones whose owner
    `shown_to` needs."""
    found: set[int] = set()
    if isinstance(data, Event):
        if data.job_id is not None and _has_private(data.data):
            found.add(data.job_id)
    elif isinstance(data, Alert):
        if data.job_id is not None and data.detail is not None:
            found.add(data.job_id)
    elif isinstance(data, list):
        for item in data:
            found |= event_job_ids(item)
    elif isinstance(data, dict):
        for item in data.values():
            found |= event_job_ids(item)
    elif isinstance(data, msgspec.Struct) and not isinstance(data, Job):
        for name in data.__struct_fields__:
            found |= event_job_ids(getattr(data, name))
    return found


def shown_to(data: Any, viewer: Viewer, owners: Mapping[int, str] | None = None) -> Any:
    """`data` as `viewer` may see it. `owners` maps the job ids of events that carry
    private data (`event_job_ids`) to their owners; an event of a job not in it is
    scrubbed. What needs no change is returned as it is (no copy)."""
    if viewer.user in viewer.admins:
        return data
    return _shown(data, viewer, owners or {}, None)


def _shown(data: Any, viewer: Viewer, owners: Mapping[int, str], job_user: str | None) -> Any:
    if isinstance(data, Job):
        fix = _job_fields(lambda name: getattr(data, name), viewer)
        if type(data) is not Job and not viewer.owns(data.user):
            fix.update(_detail_fields(data, viewer, owners))
        return msgspec.structs.replace(data, **fix) if fix else data
    if isinstance(data, Attempt):
        if data.result is None or job_user is None or viewer.reads(job_user):
            return data
        return msgspec.structs.replace(data, result=None)
    if isinstance(data, Event):
        owner = owners.get(data.job_id, job_user) if data.job_id is not None else job_user
        if (owner is not None and viewer.owns(owner)) or not _has_private(data.data):
            return data
        return msgspec.structs.replace(data, data=_scrub(data.data))
    if isinstance(data, Alert):
        owner = owners.get(data.job_id) if data.job_id is not None else None
        if data.detail is None or data.job_id is None or (owner and viewer.reads(owner)):
            return data
        return msgspec.structs.replace(data, detail=None)
    if isinstance(data, dict) and "command" in data and isinstance(data.get("user"), str):
        return _job_document(data, viewer)
    if isinstance(data, dict):  # a reply built as a dict ({"jobs": [...], "more": …})
        fixed = {
            k: shown
            for k, v in data.items()
            if isinstance(v, list | dict | msgspec.Struct)
            and (shown := _shown(v, viewer, owners, job_user)) is not v
        }
        return {**data, **fixed} if fixed else data
    if isinstance(data, list):
        items = [_shown(item, viewer, owners, job_user) for item in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    if isinstance(data, msgspec.Struct):
        fix = {}
        for name in data.__struct_fields__:
            value = getattr(data, name)
            if isinstance(value, list | msgspec.Struct):
                shown = _shown(value, viewer, owners, job_user)
                if shown is not value:
                    fix[name] = shown
        return msgspec.structs.replace(data, **fix) if fix else data
    return data


def _detail_fields(job: Job, viewer: Viewer, owners: Mapping[int, str]) -> dict[str, Any]:
    """A job reply's own extras (`job show`'s events, attempts, logs, artifact syncs)
    for a viewer who does not own the job."""
    fix: dict[str, Any] = {}
    for name in job.__struct_fields__:
        if name in Job.__struct_fields__:
            continue
        value = getattr(job, name)
        if name in _SHOW_PRIVATE and not viewer.reads(job.user):
            if value is not UNSET and value is not None:
                fix[name] = UNSET
        elif isinstance(value, list):
            shown = _shown(value, viewer, owners, job.user)
            if shown is not value:
                fix[name] = shown
    return fix


def _job_document(doc: dict[str, Any], viewer: Viewer) -> Any:
    """`job show`'s document: the job's fields, its events and attempts, its logs."""
    user: str = doc["user"]
    fix = _job_fields(doc.get, viewer)
    if not viewer.reads(user):
        if any(name in doc for name in _SHOW_PRIVATE):
            doc = {k: v for k, v in doc.items() if k not in _SHOW_PRIVATE}
        if doc.get("attempts"):
            fix["attempts"] = [{**a, "result": None} for a in doc["attempts"]]
    events = doc.get("events")
    if events and not viewer.owns(user):
        fix["events"] = [
            {**e, "data": _scrub(e.get("data") or {})} if _has_private(e.get("data")) else e
            for e in events
        ]
    return {**doc, **fix} if fix else doc
