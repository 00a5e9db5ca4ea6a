"""Preemption: which running `--preemptible` jobs a more urgent waiting job stops.
Pure: the placement snapshot, the jobs the pass left waiting and the candidates in;
the plan out. No I/O, no clock.

* Only a job that no node can take now (with nothing stopped) asks: one that fits
  somewhere waits for another reason (a reservation, a limit) that stopping work
  would not cure.
* Its victims are running `--preemptible` jobs of a strictly lower priority. Across
  users its priority counts at most its user's `max_preempt_priority` (`[limits]`,
  `[users.NAME]`), so a member cannot outbid others' work with any number they like.
* Per node, the fewest victims whose cards, once freed, let `place` put the job
  there; among as many, the lowest priorities, then the latest started (it loses
  the least work), then the lowest ids. Across nodes: fewest victims, then lowest
  priorities, then the node's name. A victim frees on each card what it holds there
  as placement counted it: the larger of its reservation and its sampled use.
* A job of a reservation whose window is open stops preemptible jobs on its cards
  whatever their priority (they should not have been there).
* Urgent jobs are served in the order the pass considered them; each victim is
  stopped for one job only. A later plan on a node must let every urgent job planned
  there be placed together once all their victims are gone, as the pass after the
  stops places them (in its order, on the cards it picks); else that job asks again
  in a later pass. A job alike another that found nothing asks nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations

import msgspec

from nvq.domain.placement import NodeSlot, PendingJob, Placement, place

# Subsets tried per node before only the lowest-priority prefixes are (a node with
# more preemptible jobs than this allows is rare; the prefixes are still correct).
SUBSET_BUDGET = 2048
# Urgent jobs considered per pass: beyond these, the next pass (after the victims
# stopped) serves the rest.
MAX_URGENT = 32


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A running `--preemptible` job as a possible victim."""

    job_id: int
    node: str
    user: str
    priority: int
    started_at: float
    cards: dict[int, int]  # card index → MiB it holds there (max of reserved and used)
    memory_mb: int = 0  # host RAM promised to it


class Hold(msgspec.Struct, kw_only=True):
    """A node kept for an urgent job while its victims stop: no other job starts
    there, so the cards they free go to it whatever order their exits arrive in."""

    job_id: int
    node: str
    victims: frozenset[int]
    # The node's sample time when every victim was first seen gone; the hold ends at
    # a later sample (one that no longer shows their memory) if the job still waits.
    cleared: float | None = None


def hold_ends(hold: Hold, stopping: bool, sample_time: float | None) -> tuple[bool, float | None]:
    """(whether `hold` ends now, its `cleared` mark): while a victim is still stopping
    it stays; then it stays until the node reports a sample newer than that moment."""
    if stopping:
        return False, None
    if hold.cleared is None:
        return sample_time is None, sample_time
    return sample_time is None or sample_time > hold.cleared, hold.cleared


class Preemption(msgspec.Struct, frozen=True):
    job_id: int  # the urgent job
    node: str  # where it will run once they stopped
    victims: tuple[int, ...]  # ascending


def outranks(job: PendingJob, victim: Candidate, ceiling: Mapping[str, int]) -> bool:
    """May `job` stop `victim`? Strictly higher priority; across users, capped. A job of
    a reservation whose window is open (`only`) stops any on its reserved cards."""
    if job.only is not None and any((victim.node, i) in job.only for i in victim.cards):
        return True
    power = job.priority
    cap = ceiling.get(job.user)
    if cap is not None and job.user != victim.user:
        power = min(power, cap)
    return victim.priority < power


def plan(
    slots: Sequence[NodeSlot],
    waiting: Sequence[PendingJob],
    candidates: Sequence[Candidate],
    *,
    headroom_mb: int,
    max_cpu_jobs: int,
    ceiling: Mapping[str, int] | None = None,
) -> list[Preemption]:
    """The preemptions to make now; `waiting` in the order the pass considered them."""
    if not candidates or not waiting:
        return []
    caps = ceiling or {}
    pool = {c.job_id: c for c in candidates}
    lowest = min(c.priority for c in candidates)
    by_name = {s.name: s for s in slots}
    # Per node, what earlier plans stop and the urgent jobs they start there: a later
    # plan must leave room for those too, as the pass after the stops will place them
    # (all together, in its own order and on the cards it picks), not as each alone.
    gone: dict[str, list[Candidate]] = {}
    coming: dict[str, list[PendingJob]] = {}
    out: list[Preemption] = []
    asked = 0
    failed: set[PendingJob] = set()  # shapes that found nothing: alike jobs would not
    for job in waiting:
        if (job.priority <= lowest and job.only is None) or not pool:
            continue
        shape = msgspec.structs.replace(job, id=0, created_at=0.0)
        if shape in failed:
            continue
        asked += 1
        if asked > MAX_URGENT:
            break
        if _fits_now(_now(by_name, gone, coming, headroom_mb, max_cpu_jobs), job, headroom_mb,
                     max_cpu_jobs):
            failed.add(shape)
            continue
        best: tuple[tuple[int, tuple[int, ...], str], str, list[Candidate]] | None = None
        for name in sorted(by_name):
            slot = by_name[name]
            if not slot.accepting:
                continue
            mine = sorted(
                (c for c in pool.values() if c.node == name and outranks(job, c, caps)),
                key=lambda c: (c.priority, -c.started_at, c.job_id),
            )
            before, starting = gone.get(name, []), [*coming.get(name, []), job]

            def fits(subset: Sequence[Candidate], slot: NodeSlot = slot,
                     before: list[Candidate] = before,
                     starting: list[PendingJob] = starting) -> bool:
                room = free(slot, [*before, *subset])
                found = place([room], starting, headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs)
                return len(found.placements) == len(starting)

            chosen = fewest(mine, fits)
            if chosen is None:
                continue
            key = (len(chosen), tuple(sorted((c.priority for c in chosen), reverse=True)), name)
            if best is None or key < best[0]:
                best = (key, name, chosen)
        if best is None:
            failed.add(shape)
            continue
        _, name, chosen = best
        for c in chosen:
            del pool[c.job_id]
        gone.setdefault(name, []).extend(chosen)
        coming.setdefault(name, []).append(job)
        out.append(Preemption(job.id, name, tuple(sorted(c.job_id for c in chosen))))
    return out


def _now(
    by_name: Mapping[str, NodeSlot], gone: Mapping[str, list[Candidate]],
    coming: Mapping[str, list[PendingJob]], headroom_mb: int, max_cpu_jobs: int,
) -> list[NodeSlot]:
    """The nodes with the plans so far made: their victims gone, their jobs placed."""
    out = []
    for name, slot in by_name.items():
        if name in coming:  # placed together, as `fits` and the pass place them
            slot = free(slot, gone.get(name, []))
            jobs = {j.id: j for j in coming[name]}
            found = place([slot], coming[name], headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs)
            for taken in found.placements:
                slot = deduct(slot, taken, jobs[taken.job_id])
        out.append(slot)
    return out


def fewest(
    mine: Sequence[Candidate], fits: Callable[[Sequence[Candidate]], bool]
) -> list[Candidate] | None:
    """The fewest of `mine` (lowest priority first) whose stop `fits` says is enough."""
    if not mine or not fits(mine):
        return None  # not even all of them would do
    budget = SUBSET_BUDGET
    for k in range(1, len(mine) + 1):
        # combinations() yields in the order of `mine`: the first that fits has the
        # lowest priorities among subsets of its size.
        for subset in combinations(mine, k):
            budget -= 1
            if budget < 0:
                return _prefix(mine, fits)
            if fits(subset):
                return list(subset)
    return None  # unreachable: all of them fit


def _prefix(
    mine: Sequence[Candidate], fits: Callable[[Sequence[Candidate]], bool]
) -> list[Candidate]:
    for k in range(1, len(mine) + 1):
        if fits(mine[:k]):
            return list(mine[:k])
    return list(mine)


def _fits_now(
    slots: Iterable[NodeSlot], job: PendingJob, headroom_mb: int, max_cpu_jobs: int
) -> bool:
    found = place(list(slots), [job], headroom_mb=headroom_mb, max_cpu_jobs=max_cpu_jobs)
    return bool(found.placements)


def free(slot: NodeSlot, victims: Sequence[Candidate]) -> NodeSlot:
    """`slot` as it will be once `victims` stopped."""
    # A card a victim held whole is held no more: only one job holds a card whole.
    gpus = [
        msgspec.structs.replace(
            g,
            queue_mb=max(0, g.queue_mb - sum(v.cards.get(g.index, 0) for v in victims)),
            queue_jobs=max(0, g.queue_jobs - sum(1 for v in victims if g.index in v.cards)),
            held=g.held and not any(g.index in v.cards for v in victims),
        )
        for g in slot.gpus
    ]
    ram = sum(v.memory_mb for v in victims)
    return msgspec.structs.replace(
        slot,
        gpus=gpus,
        running_jobs=max(0, slot.running_jobs - len(victims)),
        cpu_jobs=max(0, slot.cpu_jobs - sum(1 for v in victims if not v.cards)),
        memory_free_mb=None if slot.memory_free_mb is None else slot.memory_free_mb + ram,
    )


def deduct(slot: NodeSlot, placement: Placement, job: PendingJob) -> NodeSlot:
    """`slot` with `job` placed on it as `placement` says."""
    gpus = [
        msgspec.structs.replace(
            g, queue_mb=g.queue_mb + job.vram_mb, queue_jobs=g.queue_jobs + 1,
            held=g.held or job.whole,
        )
        if g.index in placement.gpus
        else g
        for g in slot.gpus
    ]
    return msgspec.structs.replace(
        slot,
        gpus=gpus,
        running_jobs=slot.running_jobs + 1,
        cpu_jobs=slot.cpu_jobs + (0 if placement.gpus else 1),
        memory_free_mb=(
            None if slot.memory_free_mb is None else slot.memory_free_mb - job.memory_mb
        ),
    )


def after_pass(
    slots: Sequence[NodeSlot], placements: Sequence[Placement], pending: Sequence[PendingJob]
) -> list[NodeSlot]:
    """The slots with this pass's placements deducted: what is left for preemption."""
    if not placements:
        return list(slots)
    jobs = {p.id: p for p in pending}
    by_name = {s.name: s for s in slots}
    for decision in placements:
        job = jobs.get(decision.job_id)
        if job is not None and decision.node in by_name:
            by_name[decision.node] = deduct(by_name[decision.node], decision, job)
    return [by_name[s.name] for s in slots]
