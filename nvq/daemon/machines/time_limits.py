"""80 % of a running job's --timeout: recorded as an event (`job_time_limit_80`) the
moment it passes, so its webhooks (`--notify-on time-limit-80`, or a webhook's
`events`) can say so while there is time to act. One task, woken by job changes,
sleeping until the nearest such moment; the runner still enforces the timeout."""

from __future__ import annotations

import math
import time

import anyio

from nvq.daemon.core.held import locked
from nvq.daemon.core.state import State
from nvq.domain.notify_on import TIME_LIMIT_80
from nvq.model import JobRecord, JobState, NewEvent, Tx

SHARE = 0.8


def due_at(job: JobRecord) -> float | None:
    if job.spec.timeout is None or job.started_at is None:
        return None
    return job.started_at + SHARE * job.spec.timeout


async def warn_time_limits(state: State) -> None:
    warned: set[tuple[int, int]] = set()
    # Attempts already told before a restart: their event is in the store.
    for job in list(state.index.running.values()):
        at = due_at(job)
        if at is not None and at <= time.time():
            past = await state.store.events(job_id=job.id)
            if any(e.kind == TIME_LIMIT_80 and e.data.get("attempt") == job.attempt
                   for e in past):
                warned.add((job.id, job.attempt))
    while True:
        changed = state.changed
        now = time.time()
        nearest = math.inf
        owed: list[JobRecord] = []
        for job in list(state.index.running.values()):
            at = due_at(job)
            if at is None or (job.id, job.attempt) in warned:
                continue
            if at <= now:
                owed.append(job)
            else:
                nearest = min(nearest, at)
        if owed:
            async with locked(state) as held:
                live = [
                    j for j in (state.jobs.get(o.id) for o in owed)
                    if j is not None and j.state is JobState.RUNNING
                ]
                events = [
                    NewEvent(
                        TIME_LIMIT_80, j.id, j.node, {"attempt": j.attempt, "timeout": j.spec.timeout}
                    )
                    for j in live
                ]
                if events:
                    await held.commit(Tx(jobs=live, events=events))
            warned.update((j.id, j.attempt) for j in owed)
            continue
        with anyio.move_on_after(max(0.0, nearest - now)):
            await changed.wait()
