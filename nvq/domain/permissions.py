"""Who may do what. Pure; the daemon learns the asking user from the control socket's
peer credentials, and every request type has one `Permission` (the table is beside
the handler table, in `nvq.daemon.handlers`).

* anyone who can reach the socket may submit, and read what `squeue` would show of any
  job (its state, node, name, times: its metadata);
* what a job holds of its owner's (its environment's values, logs, result, files) is its
  owner's and the admins' to read, and every member's with `[queue] members_read =
  "all"`; `--reveal` (secret-looking values in clear) is its owner's and the admins' only;
* a job's owner (the OS user who submitted it) or a queue admin may change a job;
* only a queue admin may do what acts on the whole queue (drain, ack, stop, backup…).
The queue's owner (the OS user the daemon runs as) is always an admin; `[queue]
admins` adds others."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord


class Rule(enum.Enum):
    ANYONE = "anyone"
    OWNER = "owner of the job, or an admin"
    PRIVATE = "owner of the job, or an admin; any member with members_read = all"
    ADMIN = "queue admin"


@dataclass(frozen=True)
class Permission:
    rule: Rule
    action: str = ""  # what the user tried, for the refusal: "stop the daemon"


ANYONE = Permission(Rule.ANYONE)


def owner(action: str) -> Permission:
    return Permission(Rule.OWNER, action)


def admin(action: str) -> Permission:
    return Permission(Rule.ADMIN, action)


def private(action: str) -> Permission:
    return Permission(Rule.PRIVATE, action)


def queue_admins(queue_owner: str, configured: Iterable[str]) -> frozenset[str]:
    return frozenset({queue_owner, *configured})


def may_manage(job: JobRecord, user: str, admins: Iterable[str]) -> bool:
    return user == job.user or user in set(admins)


def check(jobs: Iterable[JobRecord], user: str, admins: Iterable[str], action: str) -> None:
    """Raise for the first job `user` may not `action`."""
    admin_set = set(admins)
    for job in jobs:
        if not may_manage(job, user, admin_set):
            raise TransitionError(
                f"job {job.id} belongs to {job.user}: only its owner or a queue admin "
                f"([queue] admins) may {action} it"
            )


def may_read_private(job_user: str, user: str, admins: Iterable[str], members_read: str) -> bool:
    """Whether `user` may read what job's owner `job_user` put in it (environment values,
    logs, result, files)."""
    return members_read == "all" or user == job_user or user in set(admins)


def check_private(
    jobs: Iterable[JobRecord], user: str, admins: Iterable[str], members_read: str, action: str
) -> None:
    """Raise for the first job whose private part `user` may not `action`."""
    admin_set = set(admins)
    for job in jobs:
        if not may_read_private(job.user, user, admin_set, members_read):
            raise TransitionError(
                f"job {job.id} belongs to {job.user}: only its owner or a queue admin may "
                f"{action} it ([queue] members_read = \"all\" lets every member)"
            )


def check_admin(user: str, admins: Iterable[str], action: str) -> None:
    if user not in set(admins):
        raise TransitionError(
            f"only a queue admin may {action} ([queue] admins, or the queue's owner); "
            f"{user} is not one"
        )


def check_submit(user: str, queue_owner: str, can_switch_user: bool) -> None:
    """A member's job runs as the member, never as the queue's owner: a daemon that
    cannot switch user (not root) takes jobs from its owner only."""
    if user != queue_owner and not can_switch_user:
        raise TransitionError(
            f"this queue runs as {queue_owner}, not root, so it cannot run a job as {user}: "
            f"jobs of other users need a daemon started by root"
        )
