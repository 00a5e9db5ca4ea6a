"""The one way a request or a machine event changes jobs: a pure transition
(job → `Outcome`) applied to each of N jobs, committed together; the kills they owe
and a placement pass follow as `Effects`."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from nvq.daemon.core.effects import Effects
from nvq.daemon.core.errors import map_exceptions
from nvq.daemon.core.held import Held
from nvq.daemon.core.state import State
from nvq.domain import permissions
from nvq.home import queue_owner
from nvq.model import JobRecord, Outcome, Tx

Transition = Callable[[JobRecord], Outcome]


def record(tx: Tx, outcome: Outcome) -> None:
    """Add what `outcome` decided to `tx` (nothing, when it does not apply)."""
    if outcome.job is None:
        return
    tx.jobs.append(outcome.job)
    tx.events.extend(outcome.events)
    if outcome.reap is not None:
        tx.add_reaps.append(outcome.reap)


def queue_admins(state: State) -> frozenset[str]:
    return permissions.queue_admins(queue_owner(), state.config.queue.admins)


def check_allowed(state: State, jobs: Iterable[JobRecord], user: str, action: str) -> None:
    """Only a job's owner or a queue admin may change it."""
    with map_exceptions():
        permissions.check(jobs, user, queue_admins(state), action)


async def apply(
    held: Held,
    jobs: Iterable[JobRecord],
    transition: Transition,
    *,
    by: str | None = None,
    action: str | None = None,
    tx: Tx | None = None,
) -> list[JobRecord]:
    """Apply `transition` to every job in one transaction; returns the changed jobs.
    With `action`, `by` must be allowed to do it to each of them first. All or
    nothing: one refusal (a `RequestError`) changes no job. `tx` brings the rest of
    the same change (the event that caused it), committed with it."""
    state = held.state
    jobs = list(jobs)
    tx = tx if tx is not None else Tx()
    if action is not None:
        assert by is not None
        check_allowed(state, jobs, by, action)
    with map_exceptions():
        for job in jobs:
            record(tx, transition(job))
    # A job that changed state can let others move on (a cancelled lane head, a
    # finished prerequisite): without a kick they would wait for an unrelated event.
    await held.commit(tx, Effects(kills=list(tx.add_reaps), kick=True))
    return tx.jobs
