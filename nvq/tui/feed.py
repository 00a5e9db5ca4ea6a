"""From the daemon's events to what the panels must refetch: the event stream itself,
and the jobs an event batch changed, read back through the client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

import msgspec

from nvq.client import ClientError
from nvq.client.asynchronous import AsyncClient
from nvq.control import JobRow
from nvq.model import Event, Job

# Jobs refetched one by one up to this many per batch; beyond it one listing is cheaper.
SINGLE_FETCH_LIMIT = 32


async def event_stream(client: AsyncClient, since: int) -> AsyncIterator[Event]:
    """Every event after `since`, pushed by the daemon as it commits them."""
    async for event in client.subscribe(since):
        yield event


@dataclass
class Batch:
    """What a run of events asks the panels to refresh."""

    job_ids: set[int] = field(default_factory=set)
    all_jobs: bool = False  # a purge: ids are not named, reload the list
    events: list[Event] = field(default_factory=list)

    def add(self, event: Event) -> None:
        self.events.append(event)
        if event.job_id is not None:
            self.job_ids.add(event.job_id)
        if event.kind == "jobs_purged":
            self.all_jobs = True

    def __bool__(self) -> bool:
        return bool(self.events)


def as_job(doc: Job) -> Job:
    """A job as `jobs()` lists it (a JobRow, with its reason's words) from a reply that
    may carry more (JobDetail's events and attempts, which the panel does not keep)."""
    if type(doc) is JobRow:
        return doc
    return msgspec.convert(msgspec.to_builtins(doc), JobRow)


async def initial_jobs(client: AsyncClient, recent: int) -> list[Job]:
    """Every active job and the `recent` newest finished ones."""
    active = await client.jobs(active=True)
    latest = await client.jobs(limit=recent)
    by_id = {j.id: j for j in latest}
    by_id.update((j.id, j) for j in active)
    return list(by_id.values())


async def changed_jobs(client: AsyncClient, ids: Iterable[int]) -> tuple[list[Job], list[int]]:
    """The current state of these jobs, and the ids that no longer exist."""
    wanted = set(ids)
    if len(wanted) > SINGLE_FETCH_LIMIT:
        # a burst (an array submitted, a node's jobs ending): one listing of the
        # newest jobs covers them
        listed = await client.jobs(limit=max(len(wanted), max(wanted) - min(wanted) + 1))
        active = await client.jobs(active=True)
        found = {j.id: j for j in [*listed, *active] if j.id in wanted}
        return list(found.values()), []
    jobs: list[Job] = []
    gone: list[int] = []
    for id in sorted(wanted):
        try:
            jobs.append(as_job(await client.show(id)))
        except ClientError as exc:
            if "no job" not in str(exc):
                raise
            gone.append(id)
    return jobs, gone
