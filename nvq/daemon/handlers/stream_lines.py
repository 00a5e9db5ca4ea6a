"""What a filtered subscription (`queue events --follow --job/--mine/--user/--kind`)
sends of each batch, and, with `detail`, each event as a `StreamEvent`: its `--kind`
words and, on a job's end, how it ended. Filtered here, before anything is encoded or
sent, so a follower costs the daemon little for the events it does not want."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nvq import control as c
from nvq.control.stream_events import JobEnd, StreamEvent, tail_of
from nvq.daemon.core.errors import BadRequest
from nvq.daemon.core.state import State
from nvq.daemon.handlers.visibility import Viewer
from nvq.domain.event_classes import CLASSES, END_STATES, classes_of, unknown_classes
from nvq.model import Event, JobRecord


@dataclass(frozen=True)
class StreamFilter:
    jobs: frozenset[int]
    user: str | None  # only this owner's jobs
    classes: frozenset[str]
    detail: bool

    @property
    def needs_jobs(self) -> bool:
        """Whether a batch's job records must be read (owners, or how a job ended)."""
        return self.user is not None or self.detail


def filter_of(req: c.Subscribe, viewer: Viewer | None) -> StreamFilter:
    """The request's filters; raises BadRequest for a word `--kind` does not know."""
    bad = unknown_classes(list(req.classes))
    if bad:
        raise BadRequest(f"--kind: {bad[0]!r} is not one of {', '.join(CLASSES)}")
    jobs = set(req.jobs) | ({req.job_id} if req.job_id is not None else set())
    user = viewer.user if req.mine and viewer is not None else req.user
    return StreamFilter(frozenset(jobs), user, frozenset(req.classes), req.detail)


def keeps(f: StreamFilter, ev: Event, owner: str | None) -> bool:
    """Whether `ev` (of a job owned by `owner`, None: no job or unknown) passes `f`."""
    if f.jobs and ev.job_id not in f.jobs:
        return False
    if f.user is not None and owner != f.user:
        return False
    return not f.classes or bool(f.classes.intersection(classes_of(ev.kind, ev.job_id)))


def line_of(ev: Event, job: JobRecord | None, reads: bool) -> StreamEvent:
    """`ev` with its words and, when it ended a job, how. The job's result and stderr
    tail ride along only when `reads` (the viewer may see the job's output) and the
    end still stands: the record holds the latest attempt, not this event's."""
    state = END_STATES.get(ev.kind)
    end = None
    if state is not None:
        data = ev.data or {}
        attempt = data.get("attempt")
        current = job is not None and str(job.state) == state and (
            attempt is None or attempt == job.attempt)
        end = JobEnd(
            state=state,
            exit_code=job.exit_code if current and job else data.get("exit_code"),
            signal=job.signal if current and job else data.get("signal"),
            reason=job.reason if current and job else data.get("reason", data.get("error")),
            result=job.result if current and job and reads else None,
            stderr_tail=tail_of(job.stderr_tail) if current and job and reads else None,
            current=current,
        )
    return StreamEvent(
        id=ev.id, time=ev.time, kind=ev.kind, job_id=ev.job_id, node=ev.node, data=ev.data,
        classes=classes_of(ev.kind, ev.job_id), end=end,
    )


async def jobs_of(state: State, ids: Iterable[int]) -> dict[int, JobRecord]:
    """The records of `ids`: the live ones from memory, the rest from the store."""
    found = {i: state.jobs[i] for i in ids if i in state.jobs}
    rest = sorted(set(ids) - found.keys())
    if rest:
        found |= {j.id: j for j in await state.store.jobs(ids=rest)}
    return found


async def check_jobs(state: State, f: StreamFilter) -> None:
    """A `--job` the queue has no record of, or of another user than `--mine` or
    `--submitter` names, would show nothing and be waited for forever: refused."""
    if f.jobs:
        known = await jobs_of(state, f.jobs)
        missing = sorted(f.jobs - known.keys())
        if missing:
            raise BadRequest(f"no job with id {missing[0]}")
        others = sorted(i for i, j in known.items() if f.user is not None and j.user != f.user)
        if others:
            job = known[others[0]]
            raise BadRequest(f"job {job.id} is {job.user}'s, and the stream asks for "
                             f"{f.user}'s jobs only (--mine or --submitter)")


ENDED_KEPT = 1000  # end events whose job records stay in memory for other followers
LINES_KEPT = 10_000  # lines made, kept for the followers that have not read them yet


async def _ended_jobs(state: State, ends: list[Event]) -> dict[int, JobRecord]:
    """The records of the jobs `ends` ended, by job id: a hundred followers of one end
    read the store once."""
    memo = state.subscribers.ended
    if any(e.id not in memo for e in ends):
        # Every follower wakes for the same commit: the first reads, the rest find it.
        async with state.subscribers.ended_read:
            missing = [e for e in ends if e.id not in memo]
            ids = {e.job_id for e in missing if e.job_id is not None}
            read = await jobs_of(state, ids) if ids else {}
            for e in missing:
                if e.job_id in read:
                    memo[e.id] = read[e.job_id]
            while len(memo) > ENDED_KEPT:
                memo.popitem(last=False)
    return {memo[e.id].id: memo[e.id] for e in ends if e.id in memo}


async def lines(
    state: State, events: list[Event], f: StreamFilter, viewer: Viewer | None, *,
    live: bool = True,
) -> list[Event]:
    """What of `events` the follower asked for, as it asked for them. `live`: a commit
    just fanned out, whose lines every follower shares; a page of the backlog is made
    from the records as they are now (a job requeued since its end is no longer
    `current` there, though it was when the end was live)."""
    if f.jobs:
        events = [e for e in events if e.job_id in f.jobs]
    if not f.needs_jobs:
        return [e for e in events if keeps(f, e, None)]
    # The ended jobs' records (a detailed end line is made from them), and the owners
    # of the rest for --mine/--user; no other line needs a record.
    jobs: dict[int, JobRecord] = {}
    if f.detail:
        ends = [e for e in events if e.kind in END_STATES and e.job_id is not None]
        if ends and live:
            jobs = await _ended_jobs(state, ends)
        elif ends:
            jobs = await jobs_of(state, {e.job_id for e in ends if e.job_id is not None})
    if f.user is not None:
        owners = {e.job_id for e in events if e.job_id is not None} - jobs.keys()
        jobs |= await jobs_of(state, owners) if owners else {}
    out: list[Event] = []
    for e in events:
        job = jobs.get(e.job_id) if e.job_id is not None else None
        if not keeps(f, e, job.user if job is not None else None):
            continue
        if f.detail:
            reads = viewer is None or job is None or viewer.reads(job.user)
            e = _line(state, e, job, reads) if live else line_of(e, job, reads)
        out.append(e)
    return out


def _line(state: State, ev: Event, job: JobRecord | None, reads: bool) -> Event:
    """`line_of`, made once for every follower that reads it alike."""
    made = state.subscribers.lines
    key = (ev.id, reads)
    line = made.get(key)
    if line is None:
        line = made[key] = line_of(ev, job, reads)
        while len(made) > LINES_KEPT:
            made.popitem(last=False)
    return line
