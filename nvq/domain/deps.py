"""Whether a pending job's prerequisites let it run: pure, from the prerequisites' states.

`--after` waits for every listed job to complete; if one ends any other way the
dependent is held for a person to decide (nothing cascades). `--after-any` waits for
every listed job to end, however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from nvq.model import FINISHED_STATES, JobRecord, JobState

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


def prerequisites(job: JobRecord) -> list[int]:
    return [*job.spec.after, *job.spec.after_any]


def dependency_status(job: JobRecord, states: Mapping[int, JobState]) -> DepStatus:
    """`states` holds the state of every prerequisite; a missing one (purged) counts as
    completed: nothing is left to wait for."""
    waiting: int | None = None
    for dep in job.spec.after:
        state = states.get(dep, JobState.COMPLETED)
        if state in BAD_ENDS:
            return Blocked(dep, state)
        if state is not JobState.COMPLETED and waiting is None:
            waiting = dep
    for dep in job.spec.after_any:
        state = states.get(dep, JobState.COMPLETED)
        if state not in FINISHED_STATES and waiting is None:
            waiting = dep
    return Ready() if waiting is None else Waiting(waiting)


def dead_prerequisites(job: JobRecord, states: Mapping[int, JobState]) -> list[int]:
    """The `--after` prerequisites that ended badly (what `job release` drops)."""
    return [d for d in job.spec.after if states.get(d, JobState.COMPLETED) in BAD_ENDS]


def cycle_closed_by(
    job_id: int, adding: Iterable[int], waits_for: Callable[[int], Iterable[int]]
) -> list[int] | None:
    """The cycle that making `job_id` wait for each of `adding` would close, as the
    path `[job_id, a, …, job_id]`, or None. `waits_for(j)` is what job j waits for (only
    jobs not yet ended matter: one that ended holds nobody back, so the caller gives
    none for it). Iterative, each job visited once: a chain of a million jobs is fine."""
    for start in adding:
        if start == job_id:
            return [job_id, job_id]
        parent: dict[int, int] = {start: job_id}
        stack = [start]
        while stack:
            node = stack.pop()
            for nxt in waits_for(node):
                if nxt == job_id:
                    path = [node]
                    while path[-1] != job_id:
                        path.append(parent[path[-1]])
                    return [job_id, *reversed(path[:-1]), job_id]
                if nxt not in parent:
                    parent[nxt] = node
                    stack.append(nxt)
    return None


def cycle_message(cycle: list[int]) -> str:
    return f"job {cycle[0]} would wait for itself: " + " → ".join(map(str, cycle))
