"""Whether a pending job's prerequisites let it run: pure, from the prerequisites' states.

`--after` waits for every listed job to complete; if one ends any other way the
dependent is held for a person to decide (nothing cascades). `--after-any` waits for
every listed job to end, however it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nvq.model import FINISHED_STATES, Job, JobState

BAD_ENDS = FINISHED_STATES - {JobState.COMPLETED}


@dataclass(frozen=True)
class Ready:
    pass


@dataclass(frozen=True)
class Waiting:
    on: int


@dataclass(frozen=True)
class Blocked:
    """A prerequisite of `--after` ended badly: the job must be held."""

    on: int
    state: JobState


DepStatus = Ready | Waiting | Blocked


def prerequisites(job: Job) -> list[int]:
    return [*job.after, *job.after_any]


def dependency_status(job: Job, states: Mapping[int, JobState]) -> DepStatus:
    """`states` holds the state of every prerequisite; a missing one (purged) counts as
    completed: nothing is left to wait for."""
    waiting: int | None = None
    for dep in job.after:
        state = states.get(dep, JobState.COMPLETED)
        if state in BAD_ENDS:
            return Blocked(dep, state)
        if state is not JobState.COMPLETED and waiting is None:
            waiting = dep
    for dep in job.after_any:
        state = states.get(dep, JobState.COMPLETED)
        if state not in FINISHED_STATES and waiting is None:
            waiting = dep
    return Ready() if waiting is None else Waiting(waiting)


def dead_prerequisites(job: Job, states: Mapping[int, JobState]) -> list[int]:
    """The `--after` prerequisites that ended badly (what `job release` drops)."""
    return [d for d in job.after if states.get(d, JobState.COMPLETED) in BAD_ENDS]
