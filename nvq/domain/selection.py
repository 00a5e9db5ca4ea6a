"""Which jobs a bulk action takes: `job cancel --user alice --state pending`, as
`scancel -u alice --state=PENDING`. Pure; the daemon hands it the live jobs (or the
ones a request named) and the asking user.

Named ids keep the all-or-nothing rule (one job the asker may not change refuses the
request). A selection without ids is a question about the whole queue, so it takes
only what the asker may change: a member's `job cancel --state pending` cancels their
own pending jobs and leaves everyone else's, as scancel does. Naming another user
(`--user alice`) is a claim on that user's jobs: refused unless the asker is an
admin, and a refusal changes nothing."""

from __future__ import annotations

from collections.abc import Iterable

from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord, JobState


def parse_states(names: Iterable[str]) -> frozenset[JobState]:
    """The states named, or a `ValueError` naming the first word that is not one."""
    known = {s.value: s for s in JobState}
    out: set[JobState] = set()
    for name in names:
        if name not in known:
            raise ValueError(f"--state {name!r} is not a job state; states are {', '.join(known)}")
        out.add(known[name])
    return frozenset(out)


def owner_of(user: str | None, mine: bool, asker: str) -> str | None:
    """The one user whose jobs a selection asks for, if it names one."""
    if mine and user is not None and user != asker:
        raise ValueError("give --user NAME or --mine, not both")
    return asker if mine else user


def select(
    jobs: Iterable[JobRecord],
    *,
    user: str | None,
    mine: bool,
    states: list[str] | None,
    tag: str | None,
    asker: str,
    admins: Iterable[str],
    action: str,
    applies_to: frozenset[JobState],
    named: bool,
) -> list[JobRecord]:
    """The jobs of `jobs` that the selectors (`user`, `mine`: the asker's, `states`,
    `tag`; None matches all) take for `action`, in id order, of those in a state the
    action applies to (`applies_to`). With `named`
    (the request gave ids) the caller keeps its all-or-nothing permission check;
    without, jobs the asker may not change are left out. Raises `TransitionError`
    when the selection names another user's jobs and the asker is no admin, and
    `ValueError` for a bad selector."""
    admin_set = set(admins)
    user = owner_of(user, mine, asker)
    wanted = parse_states(states) if states else None
    is_admin = asker in admin_set
    if user is not None and user != asker and not is_admin:
        raise TransitionError(
            f"only {user} or a queue admin ([queue] admins) may {action} {user}'s jobs; "
            f"{asker} is not one"
        )
    chosen = [
        j
        for j in jobs
        if j.state in applies_to
        and (wanted is None or j.state in wanted)
        and (user is None or j.user == user)
        and (tag is None or tag in j.spec.tags)
        and (named or is_admin or j.user == asker)
    ]
    return sorted(chosen, key=lambda j: j.id)
