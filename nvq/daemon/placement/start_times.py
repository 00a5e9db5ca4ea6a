"""The estimated start of waiting jobs (`job why`, `job ls`): the daemon's facts —
nodes, running jobs with their limits, progress and history, the queue in order —
handed to `nvq.domain.start_estimate`, once per placement pass."""

from __future__ import annotations

import time
from collections.abc import Collection

from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.state import State
from nvq.daemon.placement.inputs import PlacementInputs
from nvq.daemon.placement.memory import Memory
from nvq.daemon.placement.pending_view import time_limit
from nvq.daemon.placement.placing import pending_of
from nvq.daemon.placement.preempting import candidate
from nvq.daemon.placement.slots import node_slots
from nvq.domain import ordering
from nvq.domain import start_estimate as se
from nvq.domain import waiting as w
from nvq.domain.permissions import may_read_private
from nvq.model import JobRecord

# Reasons a job waits for cards: only those have a start the running jobs' ends tell.
FOR_CARDS = frozenset({w.PRIORITY, w.RESOURCES, w.FAIR_SHARE, w.STARVATION, w.BUSY})


def not_for_cards(reason: str, begin_at: float | None = None) -> se.StartEstimate:
    """The start of a job that waits on something other than cards: its `--begin` time
    for one held by it (whether cards are free then is not played so far forward: the
    queue will have changed), else that it cannot be known."""
    if reason == w.BEGIN_TIME and begin_at is not None:
        return se.StartEstimate(begin_at, "at its --begin time, if cards are free then")
    return se.StartEstimate(None, f"it cannot be known: it waits on {reason}, not on cards")


async def start_estimates(
    state: State,
    memory: Memory,
    inputs: PlacementInputs,
    wanted: Collection[int],
    asker: str,
) -> dict[int, se.StartEstimate]:
    """The estimated start of each pending job in `wanted` (remembered until the next
    placement pass; another job asked for plays the queue again). A running job's
    progress line is private to its owner (handlers/visibility.py): only the lines
    `asker` may read tell when jobs end, so the estimate leaks none of the others."""
    admins, members_read = queue_admins(state), state.config.queue.members_read
    reader = "*" if may_read_private("", asker, admins, members_read) else asker
    facts = memory.pass_facts
    known = facts.starts.get(reader) if facts is not None else None
    if known is not None and all(i in known for i in wanted):
        return known
    now = time.time()
    running = [j for j in state.index.running.values() if j.node is not None]
    queue = ordering.dispatch_order([j for j in state.index.pending.jobs() if _ready(memory, j, now)])
    deep = {j.id for j in queue[se.MAX_QUEUE :]}
    queue = queue[: se.MAX_QUEUE]
    by_command, by_array = await state.store.run_times(
        {j.spec.command for j in [*running, *queue]},
        {j.array_id for j in [*running, *queue] if j.array_id is not None},
    )

    def typical(job: JobRecord) -> tuple[float | None, int]:
        runs = by_array.get(job.array_id, []) if job.array_id is not None else []
        runs = runs or by_command.get(job.spec.command, [])
        return se.typical_run(runs), len(runs)

    holders = [_holder(state, j, typical(j), now, reader in ("*", j.user)) for j in running]
    queued = [
        se.Queued(job=pending_of(state, memory, inputs, j), runs_for=runs, runs_because=because)
        for j in queue
        for runs, because in [se.queued_run(time_limit(j), *typical(j))]
    ]
    found = se.estimate_starts(
        node_slots(state, inputs),
        [h for h in holders if h is not None],
        queued,
        now=now,
        headroom_mb=state.config.queue.headroom_mb,
        max_cpu_jobs=state.config.queue.max_cpu_jobs_per_node,
        usage=memory.fair_share,
        wanted=[i for i in wanted if i in state.index.pending],
    )
    for job_id in deep & set(wanted):
        found[job_id] = se.StartEstimate(None, f"more than {se.MAX_QUEUE} jobs wait ahead of it")
    for job_id in set(wanted) - found.keys():  # answered too, so the next ask is remembered
        found[job_id] = se.StartEstimate(None, "it cannot be known: it is not in line for cards yet")
    if facts is not None and facts is memory.pass_facts:
        facts.starts[reader] = {**facts.starts.get(reader, {}), **found}
    return found


def _ready(memory: Memory, job: JobRecord, now: float) -> bool:
    """Whether a pending job competes for cards now (what the last pass tried, and the
    alike members of a long array it did not need to look at)."""
    facts = memory.pass_facts
    if facts is not None and job.id in facts.considered:
        return True
    spec = job.spec
    return not (spec.after or spec.after_any or spec.lane or spec.reservation
                or (spec.begin_at is not None and spec.begin_at > now))


def _holder(
    state: State, job: JobRecord, typical: tuple[float | None, int], now: float, readable: bool
) -> se.Holder | None:
    held = candidate(state, job)
    if held is None or job.node is None:
        return None
    node = state.nodes.get(job.node)
    seen_line = node.progress_seen.get(job.id) if node is not None and readable else None
    line, seen = seen_line or (None, None)
    run = se.RunFacts(
        job_id=job.id,
        started_at=job.started_at or job.dispatched_at or now,
        timeout=job.spec.timeout,
        max_runtime=job.spec.max_runtime,
        progress=line,
        progress_at=seen,
        typical=typical[0],
        typical_of=typical[1],
    )
    ends_at, because = se.run_end(run, now)
    return se.Holder(job_id=job.id, node=job.node, cards=held.cards, memory_mb=held.memory_mb,
                     ends_at=ends_at, ends_because=because)
