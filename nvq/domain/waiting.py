"""Why a waiting job waits: per node, which of its constraints fail now (with the
numbers), and the one reason `job ls` shows for it. Pure: from the same snapshot the
placement pass decided on (`NodeSlot`s, `PendingJob`), no I/O, no clock.

Reasons, as `job ls` prints them in its REASON column:
`Priority` (it fits now; jobs ahead of it go first), `Resources` (no node has room),
`Dependency`, `ArrayLimit`, `Lane`, `NodeDrained`/`NodeDown`/`NodeConnecting` (every
node it may use is), `Busy` (their owners are active), `Starvation` (room is kept for
a job that has waited too long), `Walltime` (every node that could take it is a Slurm
pilot with less time left than the job's limit needs), `Untimed` (those pilots take only
jobs with a time limit), `FairShare` (accounts that used the cards less lately go
first), `QuotaGPUs`/`QuotaJobs`/`QuotaHours` (its user's limit holds it back), `BeginTime`
(its `--begin` time has not come), `Stopping` (its previous attempt is still being stopped or its files synced),
`Preempting` (lower-priority preemptible jobs are being stopped to make room for it),
`Reservation` (outside its reservation's window, or only reserved cards have room),
`Paused`, `Held`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, time_fits
from nvq.values import counted, format_duration, format_mib

PRIORITY = "Priority"
RESOURCES = "Resources"
DEPENDENCY = "Dependency"
ARRAY_LIMIT = "ArrayLimit"
LANE = "Lane"
NODE_DRAINED = "NodeDrained"
NODE_DOWN = "NodeDown"
NODE_CONNECTING = "NodeConnecting"
BUSY = "Busy"
STARVATION = "Starvation"
WALLTIME = "Walltime"
UNTIMED = "Untimed"
FAIR_SHARE = "FairShare"
BEGIN_TIME = "BeginTime"
STOPPING = "Stopping"
PREEMPTING = "Preempting"
RESERVATION = "Reservation"
PAUSED = "Paused"
HELD = "Held"


class Waiting(msgspec.Struct, frozen=True):
    reason: str  # one of the names above
    detail: str  # in words, with numbers


class NodeFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One node as the placement pass saw it, with what `NodeSlot.accepting` folds
    together kept apart."""

    name: str
    state: str  # "up" | "down" | "connecting"
    drained: bool = False
    fenced: bool = False  # an attempt owed a kill may still hold its cards
    slot: NodeSlot | None = None  # None: it never reported its cards


class Check(msgspec.Struct, frozen=True):
    constraint: str  # pin, state, drained, fenced, busy, walltime, untimed, cuda,
    # runtime, host memory, cards, memory per card, whole cards, quiet cards, cpu slots, lane
    ok: bool
    detail: str


class NodeFit(msgspec.Struct, frozen=True):
    node: str
    fits: bool  # every check passes: the job could start there now
    checks: list[Check]
    best_free_mb: int = -1  # the most GPU memory its `gpus`-th best card has free


def card_free(slot: NodeSlot, headroom_mb: int) -> dict[int, int]:
    """Free MiB per schedulable card, as placement computes it (a card a job holds
    whole has none to give)."""
    return {
        g.index: g.total_mb - g.foreign_mb - g.queue_mb - headroom_mb
        for g in slot.gpus
        if g.schedulable and not g.out and not g.held
    }


def pinned(job: PendingJob, name: str) -> bool:
    """Whether the job may go to this node at all (its --node prefix or lane)."""
    if job.gpu is not None:
        return name == job.node
    return job.node is None or name.startswith(job.node)


def analyze(
    job: PendingJob,
    facts: NodeFacts,
    *,
    headroom_mb: int,
    max_cpu_jobs: int,
    lane_block: str | None = None,
) -> NodeFit:
    """Every constraint of `job` on this node, each with what it needs and what the
    node has; `lane_block` is why the job's lane does not move, if it does not."""
    name = facts.name
    if not pinned(job, name):
        pin = f"lane {job.node}:{job.gpu}" if job.gpu is not None else f"--node {job.node!r}"
        return NodeFit(name, False, [Check("pin", False, f"{pin} does not match {name}")])
    checks: list[Check] = []
    if job.node is not None:
        checks.append(Check("pin", True, f"matches {name}"))
    checks.append(Check("state", facts.state == "up", f"node is {facts.state}{_undo(facts)}"))
    if facts.drained:
        checks.append(Check("drained", False, "drained: it takes no new jobs"))
    if facts.fenced:
        checks.append(
            Check("fenced", False, "a pending kill: an old attempt may still hold its cards")
        )
    if lane_block is not None:
        checks.append(Check("lane", False, lane_block))
    slot = facts.slot
    best = -1
    if slot is None:
        checks.append(Check("cards", False, "it has not reported its cards yet"))
    else:
        if slot.busy:
            may = slot.owner is not None and job.user == slot.owner and not job.forbid_busy
            who = slot.owner or "its owner"
            checks.append(Check("busy", may, f"{who} is using it: only {who}'s own jobs go there"))
        timing = _walltime(job, slot)
        if timing is not None:
            checks.append(timing)
        if job.cuda is not None:
            need = f"{job.cuda[0]}.{job.cuda[1]}"
            if slot.cuda is None:
                checks.append(Check("cuda", False, f"driver CUDA unknown, needs >= {need}"))
            else:
                have = f"{slot.cuda[0]}.{slot.cuda[1]}"
                ok = slot.cuda >= job.cuda
                checks.append(Check("cuda", ok, f"driver supports CUDA {have}, needs >= {need}"))
        if job.image:
            has = f"runs images through {slot.runtime}" if slot.runtime else \
                "has no container runtime (podman, docker, apptainer)"
            checks.append(Check("runtime", bool(slot.runtime), f"{has}; the job runs in an image"))
        if job.memory_mb and slot.memory_free_mb is not None:
            ok = slot.memory_free_mb >= job.memory_mb
            free, need_mem = format_mib(slot.memory_free_mb), format_mib(job.memory_mb)
            checks.append(Check("host memory", ok, f"{free} free, needs {need_mem}"))
        fit, best = _cards(job, slot, headroom_mb, max_cpu_jobs)
        checks.extend(fit)
    return NodeFit(name, all(c.ok for c in checks), checks, best)


def _walltime(job: PendingJob, slot: NodeSlot) -> Check | None:
    """A node with an end (a Slurm pilot): does the job's time limit fit before it?"""
    if slot.time_left is None and slot.untimed_ok:
        return None
    ok = time_fits(slot, job.time_limit)
    if job.time_limit is None:
        if slot.untimed_ok:
            left = format_duration(slot.time_left or 0.0)
            return Check("untimed", ok, f"{slot.name} has {left} left: untimed jobs leave it now")
        return Check(
            "untimed", ok, "pilots take only jobs with --timeout (allow_untimed = false)"
        )
    if slot.time_left is None:
        return Check("walltime", True, f"{slot.name} has no end")
    need = job.time_limit + slot.time_margin
    detail = (
        f"{slot.name} has {format_duration(slot.time_left)} left, the job needs "
        f"{format_duration(need)} (its limit {format_duration(job.time_limit)} + "
        f"{format_duration(slot.time_margin)} to sync before the allocation ends)"
    )
    return Check("walltime", ok, detail)


def _cards(
    job: PendingJob, slot: NodeSlot, headroom_mb: int, max_cpu_jobs: int
) -> tuple[list[Check], int]:
    if job.gpus == 0 and job.gpu is None:
        ok = slot.cpu_jobs < max_cpu_jobs
        detail = f"runs {slot.cpu_jobs} CPU-only jobs, at most {max_cpu_jobs}"
        return [Check("cpu slots", ok, detail)], -1
    free = card_free(slot, headroom_mb)
    need = format_mib(job.vram_mb)
    if job.gpu is not None:
        if job.gpu not in free:
            return [Check("cards", False, f"{slot.name}:{job.gpu} is not a schedulable GPU")], -1
        have = free[job.gpu]
        detail = f"{slot.name}:{job.gpu} has {format_mib(max(have, 0))} free, needs {need}"
        return [Check("memory per card", have >= job.vram_mb, detail)], have
    held = sum(1 for g in slot.gpus if g.schedulable and not g.out and g.held)
    if len(free) < job.gpus:
        detail = f"has {counted(len(free), 'schedulable GPU')}, needs {job.gpus}"
        if held:
            detail = (
                f"{held} of its {len(free) + held} GPUs are held whole by jobs without "
                f"--vram, {len(free)} left, needs {job.gpus}"
            )
        return [Check("cards", False, detail)], -1
    if job.quiet:
        return _quiet_cards(job, slot, free)
    if job.whole:
        empty = sum(1 for g in slot.gpus if g.index in free and not g.queue_jobs)
        detail = (
            f"{empty} of its GPUs run no queue job, needs {job.gpus} whole (no --vram; "
            "[queue] share_cards = true lets jobs share)"
        )
        ok = empty >= job.gpus
        cards_ok = Check(
            "cards", True, f"has {counted(len(free), 'schedulable GPU')}, needs {job.gpus}"
        )
        return [cards_ok, Check("whole cards", ok, detail)], 0 if ok else -1
    # Only a card that could ever hold the job is one it waits for: a 24 GiB card
    # with 23.5 GiB free is no candidate for a 70 GiB job, however free it is.
    cards = {g.index: g for g in slot.gpus if g.index in free}
    could = {i: f for i, f in free.items() if cards[i].total_mb - headroom_mb >= job.vram_mb}
    if len(could) < job.gpus:
        largest = format_mib(max(g.total_mb for g in cards.values()))
        detail = (
            f"no card here can ever hold {need} (the largest is {largest})" if job.gpus == 1
            else f"{len(could)} of its GPUs can ever hold {need}, needs {job.gpus}"
        )
        return [Check("memory per card", False, detail)], -1
    ranked = sorted(could.items(), key=lambda kv: (-kv[1], kv[0]))
    index, have = ranked[job.gpus - 1]
    if job.gpus == 1:
        detail = (
            f"{slot.name}:{index} ({format_mib(cards[index].total_mb)}) has "
            f"{format_mib(max(have, 0))} free, needs {need}{_held_by(cards[index])}"
        )
    else:
        room = sum(1 for _, f in ranked if f >= job.vram_mb)
        detail = f"{room} of {counted(len(free), 'GPU')} have {need} free, needs {job.gpus}"
    cards_ok = Check("cards", True, f"has {counted(len(free), 'schedulable GPU')}, needs {job.gpus}")
    return [cards_ok, Check("memory per card", have >= job.vram_mb, detail)], have


def _quiet_cards(job: PendingJob, slot: NodeSlot, free: dict[int, int]) -> tuple[list[Check], int]:
    """--quiet: enough cards with nothing else on them — no queue job, no process the
    queue did not start — and the memory it asks on each."""
    cards = [g for g in slot.gpus if g.index in free]
    jobs = sum(1 for g in cards if g.queue_jobs)
    foreign = sum(1 for g in cards if not g.queue_jobs and (g.foreign_mb or g.foreign_util))
    quiet = [g for g in cards if not g.queue_jobs and not (g.foreign_mb or g.foreign_util)
             and free[g.index] >= job.vram_mb]
    ok = len(quiet) >= job.gpus
    detail = (f"{len(quiet)} of its GPUs have nothing else on them, needs {job.gpus} "
              f"(--quiet; queue jobs on {jobs}, processes the queue did not start on {foreign})")
    cards_ok = Check("cards", True, f"has {counted(len(free), 'schedulable GPU')}, needs {job.gpus}")
    return [cards_ok, Check("quiet cards", ok, detail)], 0 if ok else -1


def _held_by(gpu: GpuSlot) -> str:
    """What holds a card's memory now: the queue's jobs, other processes, or both."""
    parts = []
    if gpu.queue_mb > 0:
        parts.append(f"queue jobs hold {format_mib(gpu.queue_mb)}")
    if gpu.foreign_mb > 0:
        parts.append(f"other processes {format_mib(gpu.foreign_mb)}")
    return f" ({', '.join(parts)})" if parts else ""


def summarize(
    job: PendingJob, fits: Sequence[NodeFit], *, reserved_for: tuple[int, str] | None = None
) -> Waiting:
    """The one reason for a job the pass did not start, from its per-node analysis.
    `reserved_for`: (job id, node) of a starvation reservation, if one is held."""
    candidates = [f for f in fits if not _elsewhere(f)]
    fitting = [f for f in candidates if f.fits]
    if fitting:
        if reserved_for is not None and reserved_for[0] != job.id:
            held_for, node = reserved_for
            if all(f.node == node for f in fitting):
                return Waiting(
                    STARVATION, f"starvation reservation for job {held_for} on node {node}"
                )
        where = ", ".join(f.node for f in fitting[:3])
        return Waiting(PRIORITY, f"fits on {where}; jobs ahead of it are placed first")
    if not candidates:
        return Waiting(RESOURCES, "no node matches its request")
    blocking = [_first_failure(f) for f in candidates]
    kinds = {c.constraint for c in blocking}
    pin = job.node is not None or job.gpu is not None
    if pin and kinds <= {"state", "drained", "cards"}:
        states = [c.detail for c in blocking if c.constraint == "state"]
        if any("connecting" in s for s in states) or any(
            c.detail.startswith("it has not reported") for c in blocking
        ):
            return Waiting(NODE_CONNECTING, _nodes_say(candidates, blocking))
        if states:
            return Waiting(NODE_DOWN, _nodes_say(candidates, blocking))
        if "drained" in kinds:
            return Waiting(NODE_DRAINED, _nodes_say(candidates, blocking))
    if kinds == {"busy"}:
        return Waiting(BUSY, _nodes_say(candidates, blocking))
    if kinds == {"lane"}:
        return Waiting(LANE, blocking[0].detail)
    if kinds == {"untimed"}:
        return Waiting(UNTIMED, blocking[0].detail)
    if kinds <= {"walltime", "untimed"}:
        return Waiting(WALLTIME, _nodes_say(candidates, blocking))
    # A pilot with room that only its time left keeps the job from: that, not another
    # node's lack of room, is what would let it start (a longer allocation).
    short = [f for f in candidates if _only_time(f)]
    if short:
        return Waiting(WALLTIME, _nodes_say(short, [_first_failure(f) for f in short]))
    return Waiting(RESOURCES, _best_candidate(candidates))


def _only_time(fit: NodeFit) -> bool:
    failed = {c.constraint for c in fit.checks if not c.ok}
    return bool(failed) and failed <= {"walltime", "untimed"}


def _undo(facts: NodeFacts) -> str:
    """The command that brings a node someone took out back into the queue."""
    if facts.state == "stopped":
        return f" (`nvq node start {facts.name}`)"
    if facts.state == "ignored":
        return f" (`nvq queue unignore {facts.name}`)"
    return ""


def _elsewhere(fit: NodeFit) -> bool:
    """The job may not go to this node at all (its --node or lane names another)."""
    return fit.checks[0].constraint == "pin" and not fit.checks[0].ok


def _first_failure(fit: NodeFit) -> Check:
    return next(c for c in fit.checks if not c.ok)


def _nodes_say(fits: Sequence[NodeFit], failures: Sequence[Check]) -> str:
    shown = [f"{f.node}: {c.detail}" for f, c in zip(fits, failures, strict=True)][:3]
    more = len(fits) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _best_candidate(fits: Sequence[NodeFit]) -> str:
    """The node that came closest: the most GPU memory on offer among those that fail
    only for memory per card, else the first node's first failing check."""
    by_memory = [
        f for f in fits if all(c.ok or c.constraint == "memory per card" for c in f.checks)
    ]
    if by_memory:
        best = max(by_memory, key=lambda f: (f.best_free_mb, f.node))
        detail = next(c.detail for c in best.checks if c.constraint == "memory per card")
        return f"best candidate: {detail}"
    return _nodes_say(fits, [_first_failure(f) for f in fits])
