"""Who may change a job: its owner (the OS user who submitted it) or a queue admin.
Pure; the daemon learns the asking user from the control socket's peer credentials."""

from __future__ import annotations

from collections.abc import Iterable

from nvq.domain.transitions import TransitionError
from nvq.model import Job


def may_manage(job: Job, user: str, admins: Iterable[str]) -> bool:
    return user == job.user or user in set(admins)


def check(jobs: Iterable[Job], user: str, admins: Iterable[str], action: str) -> None:
    """Raise for the first job `user` may not `action`."""
    admin_set = set(admins)
    for job in jobs:
        if not may_manage(job, user, admin_set):
            raise TransitionError(
                f"job {job.id} belongs to {job.user}: only its owner or a queue admin "
                f"([queue] admins) may {action} it"
            )
