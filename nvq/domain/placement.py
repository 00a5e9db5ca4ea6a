"""Pure placement: (cluster snapshot, pending jobs) → which job starts where.

No I/O and no clock, so the daemon can call it after every event and tests can call it
with anything. The rules (see DESIGN.md, "Placement"):

* Per card, `free = total − foreign − queue − headroom`, where `queue` is
  Σ max(reservation, actual use) of the queue's jobs on it (the caller computes it).
* Pending jobs are considered by priority (high first), then — with fair share — the
  usage of their account (least first, `usage`), then age, then id.
* A GPU job needs `gpus` distinct schedulable cards on one accepting node, each with
  `free ≥ vram_mb`. A job that holds its cards whole (`whole`: `--gpus N` without
  `--vram`, unless `[queue] share_cards`) needs cards no queue job is on, and while it
  runs no other job goes on them (`GpuSlot.held`; within a pass, once placed); a CPU job (`gpus == 0`) needs an accepting node running fewer than
  `max_cpu_jobs` CPU-only jobs. Optional: `--node` prefix, minimum driver CUDA version,
  host memory.
* Among nodes that fit, the least loaded wins: fewest running jobs per schedulable card,
  then most free GPU memory, then name — but an idle node always before a busy one
  (its owner is at the keyboard). On a busy node only its owner's own jobs are placed,
  and not those of an owner who forbade it (`forbid_busy`). On that node, the fitting cards with the most
  free memory are taken (ties: fewer queue jobs, then lower index, so that jobs with no
  `--vram` spread over the cards), quiet ones first (card_choice.py).
* Every decision is deducted from the snapshot before the next job, so a pass never
  oversubscribes. A job that does not fit now is skipped, and smaller ones behind it
  may still start.
* A job that no node could ever hold, even with nothing else running, is returned as
  `Unschedulable` with the reason in words. With no nodes at all nothing is
  unschedulable: we may simply not know the cluster yet.

Speed: a pass over 10,000 pending jobs on 64 nodes × 8 cards must stay well under 50 ms.
Each node keeps its cards sorted by free memory, so "does (N cards, V MiB) fit" is one
comparison; nodes are kept sorted by load, so the first fitting node is the winner; and
a shape that failed is remembered, since capacity only shrinks during a pass.

The module holds the pass's inputs and outputs (pure data), the pass, and `Profile`:
what one request profile (node prefix, CUDA, host memory, lane, busy owner, time
limit, in-place nodes) can use, why it could never fit, and what already failed.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from nvq.domain.card_choice import busy_note, busyness, first, pick, quiet
from nvq.domain.quotas import Caps
from nvq.values import format_mib

__all__ = ["GpuSlot", "NodeSlot", "PendingJob", "Placement", "PlacementResult", "Unschedulable",
           "dispatch_key", "place", "time_fits"]


# ---------------------------------------------------------------- inputs and outputs


class GpuSlot(msgspec.Struct, frozen=True):
    index: int
    total_mb: int
    foreign_mb: int  # memory of processes the queue did not start
    queue_mb: int  # Σ max(reserved, actual) of queue jobs on this card
    schedulable: bool = True  # False when outside the node's gpus allowlist
    # Out of placement for now (an unhealthy or drained card, domain/card_marks.py): no
    # job goes there, but it still counts for "could this job ever fit".
    out: bool = False
    # Utilisation (%) of the card while processes the queue did not start run there
    # (0: none do, or unknown): among cards that fit, quiet ones are taken first.
    foreign_util: int = 0
    # Queue jobs running there: among cards equally free, the one with fewest is taken,
    # so jobs that reserve no memory (`--gpus 1` without `--vram`) spread over the cards
    # instead of all landing on the first.
    queue_jobs: int = 0
    # A job holding it whole runs there: no job is placed on it (it still counts for
    # the node's load and for "could this job ever fit").
    held: bool = False


class NodeSlot(msgspec.Struct, frozen=True):
    name: str
    # Up and not drained. A non-accepting node still counts for "could ever fit".
    accepting: bool
    gpus: list[GpuSlot]
    cpu_jobs: int  # running CPU-only jobs
    running_jobs: int  # all queue jobs running there: the load
    cuda: tuple[int, int] | None = None  # driver's CUDA version; None = unknown or no driver
    memory_total_mb: int | None = None  # host RAM; None = unknown
    memory_free_mb: int | None = None  # host RAM not yet promised to queue jobs; None = unchecked
    busy: bool = False  # its owner is using it: only the owner's jobs, and only if no idle node
    owner: str | None = None
    # A Slurm pilot: a job's time limit plus the margin must fit in the time left, and
    # jobs without one go there only when the cluster allows untimed jobs.
    time_left: float | None = None  # None: the node has no end
    untimed_ok: bool = True
    time_margin: float = 0.0
    runtime: str = ""  # the container runtime image jobs run through; "": none


class PendingJob(msgspec.Struct, frozen=True):
    id: int
    priority: int
    created_at: float
    gpus: int
    vram_mb: int  # per card
    node: str | None = None  # node name prefix
    cuda: tuple[int, int] | None = None  # minimum driver CUDA version
    memory_mb: int = 0  # host RAM
    # A lane job: exactly this card of the node named `node` (exact name, not a prefix).
    gpu: int | None = None
    user: str = ""  # who submitted it: a busy node takes its owner's jobs only
    forbid_busy: bool = False  # the user forbade their jobs on their own busy node
    time_limit: float | None = None  # --timeout / --max-runtime: what a pilot must hold
    # Only these nodes (exact names): an in-place job's directory is only there.
    nodes: tuple[str, ...] | None = None
    # Whose usage it counts against (fair share): the OS user or the submitter label.
    account: str = ""
    image: bool = False  # runs in a container image: only nodes with a runtime
    # Reservations (nvq.domain.reservations): a `--reservation` job runs on these cards
    # (node, index) only; any job keeps off `closed` ones. Either set: the slower path.
    only: frozenset[tuple[str, int]] | None = None
    closed: frozenset[tuple[str, int]] = frozenset()
    # Holds its cards whole: only cards no queue job is on, and no job after it there.
    whole: bool = False
    # --quiet (held whole too): only cards no process the queue did not start is on.
    quiet: bool = False


class Placement(msgspec.Struct, frozen=True):
    job_id: int
    node: str
    gpus: list[int]  # card indices, ascending; [] for a CPU job
    # Said when it had to take a card busy with work the queue did not start.
    note: str = ""


class Unschedulable(msgspec.Struct, frozen=True):
    job_id: int
    reason: str


class PlacementResult(msgspec.Struct, frozen=True):
    placements: list[Placement]
    unschedulable: list[Unschedulable]


# ---------------------------------------------------------------- the pass


SortKey = tuple[float, ...]


def dispatch_key(usage: Mapping[str, float] | None) -> Callable[[PendingJob], SortKey]:
    """The order a pass considers jobs in: priority, then the account's fair-share
    usage (lowest first; absent: no fair share), then age, then id. Within one account
    the usage is the same, so its jobs keep their priority-then-submission order."""
    if not usage:
        return lambda j: (-j.priority, j.created_at, j.id)
    get = usage.get
    return lambda j: (-j.priority, get(j.account, 0.0), j.created_at, j.id)


def place(
    nodes: Sequence[NodeSlot],
    pending: Sequence[PendingJob],
    *,
    headroom_mb: int,
    max_cpu_jobs: int,
    usage: Mapping[str, float] | None = None,
    caps: Caps | None = None,
) -> PlacementResult:
    """Decide which pending jobs start now, and where; see the module docstring.
    `usage`: each account's fair-share usage (over its share); None or empty: none.
    `caps`: how many cards and jobs limited users may still start (counted down)."""
    if not nodes:
        return PlacementResult(placements=[], unschedulable=[])
    counting = caps.copy() if caps else None  # the caller's stays as it was: pure
    return _Pass(nodes, headroom_mb, max_cpu_jobs).run(pending, dispatch_key(usage), counting)


# -- implementation ----------------------------------------------------------------------


class _Node:
    """A node's mutable residual capacity during one pass."""

    __slots__ = (
        "_capacity",
        "accepting",
        "busy",
        "busy_cards",
        "cards",
        "cpu_jobs",
        "cuda",
        "foreign",
        "jobs_on",
        "key",
        "memory_free",
        "name",
        "owner",
        "total_free",
    )

    def __init__(self, slot: NodeSlot, position: int, headroom_mb: int) -> None:
        self.name = slot.name
        self.accepting = slot.accepting
        self.busy = slot.busy
        self.owner = slot.owner
        self.cuda = slot.cuda
        self.cpu_jobs = slot.cpu_jobs
        self.memory_free = slot.memory_free_mb
        # (−free, index), kept in the order in which cards are taken: free descending,
        # then fewest queue jobs, then index ascending; cards[n−1] is the n-th most free.
        self.jobs_on = {g.index: g.queue_jobs for g in slot.gpus}
        self.cards = self._order(
            (g.foreign_mb + g.queue_mb + headroom_mb - g.total_mb, g.index)
            for g in slot.gpus
            if g.schedulable and not g.out and not g.held
        )
        # index → utilisation of the cards busy with foreign work (usually none)
        self.busy_cards = {g.index: g.foreign_util for g in slot.gpus if busyness(g.foreign_util)}
        # cards with any process the queue did not start on them: none for a --quiet job
        self.foreign = {g.index for g in slot.gpus if g.foreign_mb or g.foreign_util}
        # A held card is busy, not gone: it counts for the load.
        self._capacity = max(1, sum(1 for g in slot.gpus if g.schedulable and not g.out))
        self.total_free = sum(-neg for neg, _ in self.cards if neg < 0)  # overdrawn cards: 0
        self.key = self._key(slot.running_jobs, position)

    def _order(self, cards: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        jobs = self.jobs_on
        return sorted(cards, key=lambda c: (c[0], jobs[c[1]], c[1]))

    def _count(self, picked: Sequence[int]) -> None:
        """One more job on each of `picked`, the cards then put back in order."""
        for index in picked:
            self.jobs_on[index] += 1
        if picked:
            self.cards = self._order(self.cards)

    def _key(self, running: int, position: int) -> tuple[bool, float, int, str, int, int]:
        # Idle before busy, then least loaded. Equal ratios of small ints give identical floats (IEEE
        # division is correctly rounded), so the float is a faithful stand-in for the
        # fraction. `running` and `position` ride along to rebuild the key.
        return (self.busy, running / self._capacity, -self.total_free, self.name, position, running)

    def fits(self, gpus: int, vram_mb: int, memory_mb: int, max_cpu_jobs: int) -> bool:
        if memory_mb and self.memory_free is not None and self.memory_free < memory_mb:
            return False
        if gpus == 0:
            return self.cpu_jobs < max_cpu_jobs
        return len(self.cards) >= gpus and -self.cards[gpus - 1][0] >= vram_mb

    def fits_card(self, gpu: int, vram_mb: int, memory_mb: int) -> bool:
        if memory_mb and self.memory_free is not None and self.memory_free < memory_mb:
            return False
        return any(index == gpu and -neg >= vram_mb for neg, index in self.cards)

    def open_cards(self, job: PendingJob) -> list[tuple[int, int]]:
        """This node's cards `job` may use (most free first): its reservation's only,
        none it must keep off, its lane's card; for a job holding cards whole, only
        those no queue job is on; for a --quiet one, only those no foreign process is on."""
        only, closed, name, jobs = job.only, job.closed, self.name, self.jobs_on
        return [
            (neg, index)
            for neg, index in self.cards
            if (only is None or (name, index) in only)
            and (name, index) not in closed
            and (job.gpu is None or index == job.gpu)
            and not (job.whole and jobs[index])
            and not (job.quiet and index in self.foreign)
        ]

    def hold(self, picked: Sequence[int]) -> None:
        """A job holding `picked` whole was placed there: no other job goes on them."""
        self.total_free -= sum(-neg for neg, index in self.cards if index in picked and neg < 0)
        self.cards = [c for c in self.cards if c[1] not in picked]

    def take_cards(self, picked: list[int], vram_mb: int, memory_mb: int) -> list[int]:
        """Deduct a job given these cards (each had free ≥ vram); [] for a CPU job."""
        if vram_mb:
            self.cards = [
                (neg + vram_mb, index) if index in picked else (neg, index)
                for neg, index in self.cards
            ]
            self.total_free -= vram_mb * len(picked)
        self._count(picked)
        if not picked:
            self.cpu_jobs += 1
        if memory_mb and self.memory_free is not None:
            self.memory_free -= memory_mb
        _, _, _, _, position, running = self.key
        self.key = self._key(running + 1, position)
        return sorted(picked)

    def take(self, gpus: int, vram_mb: int, memory_mb: int, pin: int | None = None) -> list[int]:
        """Deduct a job from this node; return the chosen card indices."""
        if pin is None and self.busy_cards and gpus:
            picked = [index for _, index in pick(self.cards, gpus, vram_mb, self.busy_cards)]
            return self.take_cards(picked, vram_mb, memory_mb)
        chosen = self.cards[:gpus] if pin is None else [c for c in self.cards if c[1] == pin]
        if pin is not None and vram_mb:
            # Deduct the pinned card only (the general path below rewrites cards[:gpus]).
            self.cards = [
                (neg + vram_mb, index) if index == pin else (neg, index)
                for neg, index in self.cards
            ]
            self.total_free -= vram_mb
            vram_mb = 0
        if vram_mb:
            self.cards[:gpus] = [(neg + vram_mb, index) for neg, index in chosen]
            # Chosen cards had free ≥ vram, so none goes below 0: the clamped sum drops
            # by exactly vram per card.
            self.total_free -= vram_mb * gpus
        self._count([index for _, index in chosen])
        if gpus == 0:
            self.cpu_jobs += 1
        if memory_mb and self.memory_free is not None:
            self.memory_free -= memory_mb
        _, _, _, _, position, running = self.key
        self.key = self._key(running + 1, position)
        return sorted(index for _, index in chosen)


class _Pass:
    def __init__(self, slots: Sequence[NodeSlot], headroom_mb: int, max_cpu_jobs: int) -> None:
        self.slots = slots
        self.headroom_mb = headroom_mb
        self.max_cpu_jobs = max_cpu_jobs
        self.state = [_Node(slot, i, headroom_mb) for i, slot in enumerate(slots)]
        # Accepting nodes, least loaded first; kept sorted as decisions change loads.
        self.order = sorted(node.key for node in self.state if node.accepting)
        self.profiles: dict[
            tuple[
                str | None,
                tuple[int, int] | None,
                int,
                int | None,
                tuple[str, bool] | None,
                float | None,
                tuple[str, ...] | None,
                bool,
            ],
            Profile,
        ] = {}
        # (profile, gpus, memory, only, closed) → the least vram that did not fit.
        self.restricted_failed: dict[tuple[object, ...], int] = {}
        # Who submitted a job matters only while some node is busy: keep profiles shared.
        self.any_busy = any(slot.busy for slot in slots)
        # Time limits matter only where some node's time is limited: keep profiles shared.
        self.any_timed = any(s.time_left is not None or not s.untimed_ok for s in slots)
        self.any_busy_cards = any(node.busy_cards for node in self.state)
        self.no_quiet: dict[tuple[int, int], int] = {}  # (profile, gpus) → vram with no quiet fit

    def run(
        self,
        pending: Sequence[PendingJob],
        order: Callable[[PendingJob], SortKey],
        caps: Caps | None,
    ) -> PlacementResult:
        placements: list[Placement] = []
        unschedulable: list[Unschedulable] = []
        for job in sorted(pending, key=order):
            who = (job.user, job.forbid_busy) if self.any_busy else None
            timed = job.time_limit if self.any_timed else None
            key = (job.node, job.cuda, job.memory_mb, job.gpu, who, timed, job.nodes, job.image)
            profile = self.profiles.get(key)
            if profile is None:
                accepting = [node.accepting for node in self.state]
                profile = self.profiles[key] = Profile(accepting, self.slots, job, self.headroom_mb)
            reason = self._never(job, profile)
            if reason is not None:
                unschedulable.append(Unschedulable(job_id=job.id, reason=reason))
                continue
            if caps is not None:
                cards = 1 if job.gpu is not None else job.gpus
                if not caps.allows(job.user, cards):
                    continue  # its user's limit holds it back
                if self._place(job, profile, placements):
                    caps.took(job.user, cards)
                continue
            self._place(job, profile, placements)
        return PlacementResult(placements=placements, unschedulable=unschedulable)

    def _place(self, job: PendingJob, profile: Profile, placements: list[Placement]) -> bool:
        """Place one job if it fits now; whether it did."""
        if job.only is not None or job.closed or job.quiet or (job.whole and job.gpus and job.gpu is None):
            return self._place_restricted(job, profile, placements)
        if job.gpu is not None:
            return self._place_pinned(job, profile, placements)
        gpus = job.gpus
        vram = job.vram_mb if gpus else 0  # vram is per card; a CPU job has none
        if profile.cpu_full if gpus == 0 else vram >= profile.limit[gpus]:
            return False  # known not to fit: skip the scan
        node = self._choose(profile, gpus, vram, job.memory_mb)
        if node is None:
            if gpus == 0:
                profile.cpu_full = True
            else:
                # Remember the best on offer, not just this vram: a run of ever
                # smaller jobs that still do not fit then costs one scan, not one each.
                profile.no_fit(gpus, self._most_free(profile, gpus, job.memory_mb) + 1)
            return False
        old = node.key
        cards = node.take(gpus, vram, job.memory_mb)
        del self.order[bisect.bisect_left(self.order, old)]
        bisect.insort(self.order, node.key)
        placements.append(Placement(job_id=job.id, node=node.name, gpus=cards,
                                    note=busy_note(node.name, cards, node.busy_cards)))
        return True

    def _place_restricted(
        self, job: PendingJob, profile: Profile, placements: list[Placement]
    ) -> bool:
        """A job that may use only some cards (reservations, or cards no queue job is on
        for one that holds them whole): each node it may go to is looked at card by
        card; the least loaded that fits wins, as on the fast path."""
        gpus = 1 if job.gpu is not None else job.gpus
        vram = job.vram_mb if gpus else 0
        whole = job.whole and gpus > 0
        # Capacity only shrinks during a pass: once (gpus, vram) did not fit these cards,
        # no job asking as much or more will (the fast path's memo, per restriction).
        memo = (id(profile), gpus, job.memory_mb, job.only, job.closed, whole, job.quiet)
        if vram >= self.restricted_failed.get(memo, NEVER_FAILED):
            return False
        best: tuple[_Node, list[int]] | None = None
        for i in profile.now:
            node = self.state[i]
            if job.memory_mb and node.memory_free is not None and node.memory_free < job.memory_mb:
                continue
            if gpus == 0:
                if job.only is not None and not any(n == node.name for n, _ in job.only):
                    continue
                if node.cpu_jobs >= self.max_cpu_jobs:
                    continue
                picked: list[int] = []
            else:
                cards = node.open_cards(job)
                if len(cards) < gpus or -cards[gpus - 1][0] < vram:
                    continue
                picked = [index for _, index in pick(cards, gpus, vram, node.busy_cards)]
            if best is None or node.key < best[0].key:
                best = (node, picked)
        if best is None:
            self.restricted_failed[memo] = min(vram, self.restricted_failed.get(memo, vram))
            return False
        node, picked = best
        old = node.key
        if whole:  # all of each card is its: nothing else to deduct from them
            node.hold(picked)
        cards_taken = node.take_cards(picked, 0 if whole else vram, job.memory_mb)
        del self.order[bisect.bisect_left(self.order, old)]
        bisect.insort(self.order, node.key)
        placements.append(Placement(job_id=job.id, node=node.name, gpus=cards_taken,
                                    note=busy_note(node.name, cards_taken, node.busy_cards)))
        return True

    def _place_pinned(self, job: PendingJob, profile: Profile, placements: list[Placement]) -> bool:
        """A lane's head: its own card or nothing (no caching: one card, one check)."""
        assert job.gpu is not None
        for i in profile.now:
            node = self.state[i]
            if node.fits_card(job.gpu, job.vram_mb, job.memory_mb):
                old = node.key
                cards = node.take(1, job.vram_mb, job.memory_mb, pin=job.gpu)
                del self.order[bisect.bisect_left(self.order, old)]
                bisect.insort(self.order, node.key)
                placements.append(Placement(job_id=job.id, node=node.name, gpus=cards))
                return True
        return False

    def _choose(self, profile: Profile, gpus: int, vram: int, memory: int) -> _Node | None:
        state, limit = self.state, self.max_cpu_jobs
        if len(profile.now) * 4 < len(self.order):
            # Few candidates (a narrow --node): cheaper to look at each than walk the order.
            fitting = [state[i] for i in profile.now if state[i].fits(gpus, vram, memory, limit)]
            fitting.sort(key=lambda n: n.key)
            return next((n for n in fitting if quiet(n.cards, n.busy_cards, gpus, vram)), first(fitting))
        # Look past busy cards only while some quiet ones may fit (capacity only shrinks).
        seek = self.any_busy_cards and vram < self.no_quiet.get((id(profile), gpus), 1 << 62)
        fallback: _Node | None = None  # the least loaded that fits, busy cards and all
        for key in self.order:
            index = key[4]
            if index in profile.now and state[index].fits(gpus, vram, memory, limit):
                if not seek or quiet(state[index].cards, state[index].busy_cards, gpus, vram):
                    return state[index]
                fallback = fallback or state[index]
        if seek and fallback is not None:
            self.no_quiet[id(profile), gpus] = vram
        return fallback

    def _most_free(self, profile: Profile, gpus: int, memory: int) -> int:
        """The most vram a job of this profile could get on `gpus` cards now."""
        best = -NEVER_FAILED
        for i in profile.now:
            node = self.state[i]
            short = memory and node.memory_free is not None and node.memory_free < memory
            if len(node.cards) >= gpus and not short:
                best = max(best, -node.cards[gpus - 1][0])
        return best

    def _never(self, job: PendingJob, profile: Profile) -> str | None:
        if profile.reason is not None:
            return profile.reason
        where = f"any node{profile.qualifier}"
        if job.gpus < 0 or job.vram_mb < 0 or job.memory_mb < 0:
            return "invalid request: negative GPU count or memory"
        if job.gpus == 0:
            if self.max_cpu_jobs <= 0:
                return "CPU-only jobs are disabled (max_cpu_jobs_per_node = 0)"
            return None
        if job.gpus > profile.max_cards:
            return f"needs {gpus_text(job.gpus)}; the most on {where} is {profile.max_cards}"
        best = profile.best_card[job.gpus - 1]
        if job.vram_mb > best:
            after = f"after {format_mib(self.headroom_mb)} headroom"
            if job.gpus == 1:
                return (
                    f"needs {format_mib(job.vram_mb)} of GPU memory; the largest card on "
                    f"{where} holds {format_mib(best)} {after}"
                )
            return (
                f"needs {gpus_text(job.gpus)} with {format_mib(job.vram_mb)} each; the best "
                f"{job.gpus} cards on {where} hold {format_mib(best)} each {after}"
            )
        return None


# ---------------------------------------------------------------- what one request profile can use


class Profile:
    """What a (node prefix, cuda, memory) request can use, and what failed in this pass."""

    __slots__ = ("best_card", "cpu_full", "limit", "max_cards", "now", "qualifier", "reason")

    def __init__(
        self,
        accepting: Sequence[bool],
        slots: Sequence[NodeSlot],
        job: PendingJob,
        headroom_mb: int,
    ) -> None:
        self.reason: str | None = None  # why no node could ever hold it, if none could
        self.qualifier = ""  # "matching --node 'gpu'", for reasons
        candidates = list(range(len(slots)))
        if job.gpu is not None:
            # A lane names one card of one node, by its full name.
            candidates = [
                i
                for i in candidates
                if slots[i].name == job.node
                and any(g.index == job.gpu and g.schedulable for g in slots[i].gpus)
            ]
            self.qualifier += f" (lane {job.node}:{job.gpu})"
            if not candidates:
                self.reason = f"lane {job.node}:{job.gpu}: no such schedulable GPU"
        elif job.node is not None:
            prefix = job.node
            candidates = [i for i in candidates if slots[i].name.startswith(prefix)]
            self.qualifier += f" matching --node {prefix!r}"
            if not candidates:
                self.reason = f"--node {prefix!r} matches no node (nodes: {_names(slots)})"
        if job.nodes is not None and not self.reason:
            allowed = set(job.nodes)
            candidates = [i for i in candidates if slots[i].name in allowed]
            self.qualifier += " that sees its directory (in place)"
            if not candidates:
                self.reason = (
                    "runs in place, and no node sees its directory: it must exist on the "
                    "queue host (local node) or lie under a [[nodes]] shared prefix"
                )
        if job.cuda is not None and not self.reason:
            need = job.cuda
            # Unknown (None) might be new enough, so it cannot make the job impossible.
            ok = [i for i in candidates if _new_enough(slots[i].cuda, need, unknown=True)]
            if not ok:
                # Every candidate's version is known here: unknown ones would be `ok`.
                newest = _version(max(slots[i].cuda or (0, 0) for i in candidates))
                self.reason = (
                    f"needs CUDA >= {_version(need)}; the newest driver on any node"
                    f"{self.qualifier} supports {newest}"
                )
            candidates = ok
            self.qualifier += f" with CUDA >= {_version(need)}"
        if job.image and not self.reason:
            candidates = [i for i in candidates if slots[i].runtime]
            if not candidates:
                self.reason = (
                    f"runs in a container image; no node{self.qualifier} has a container "
                    "runtime (podman, docker or apptainer)"
                )
            self.qualifier += " with a container runtime"
        if job.memory_mb and not self.reason:
            need_mb = job.memory_mb
            ok = [i for i in candidates if _enough_memory(slots[i].memory_total_mb, need_mb)]
            if not ok:
                most = max(slots[i].memory_total_mb or 0 for i in candidates)
                self.reason = (
                    f"needs {format_mib(need_mb)} of host memory; the most on any node"
                    f"{self.qualifier} is {format_mib(most)}"
                )
            candidates = ok
            self.qualifier += f" with {format_mib(need_mb)} of host memory"
        # Nodes that can take the job now, cuda permitting (unknown cuda: not now), and
        # a busy node only for its owner's own jobs.
        self.now = {
            i
            for i in candidates
            if accepting[i]
            and (job.cuda is None or _new_enough(slots[i].cuda, job.cuda, unknown=False))
            and (not slots[i].busy or _owner_may(slots[i], job))
            and time_fits(slots[i], job.time_limit)
        }
        # best_card[n−1]: the largest size every one of some node's n best cards can hold
        # when empty, over eligible nodes — to tell "not now" from "never".
        self.max_cards = 0
        self.best_card: list[int] = []
        for i in candidates:
            sizes = sorted(
                (
                    g.total_mb - headroom_mb
                    for g in slots[i].gpus
                    if g.schedulable and (job.gpu is None or g.index == job.gpu)
                ),
                reverse=True,
            )
            self.max_cards = max(self.max_cards, len(sizes))
            for n, size in enumerate(sizes):
                if n < len(self.best_card):
                    self.best_card[n] = max(self.best_card[n], size)
                else:
                    self.best_card.append(size)
        # limit[n]: the smallest vram known not to fit on n cards now. Capacity only
        # shrinks during a pass, so once learnt it holds for the rest of it.
        self.limit = [NEVER_FAILED] * (self.max_cards + 1)
        self.cpu_full = False  # a CPU job of this profile found no room

    def no_fit(self, gpus: int, vram: int) -> None:
        # No node has `gpus` cards with `vram` free, so none has more cards with it either.
        for n in range(gpus, len(self.limit)):
            self.limit[n] = min(self.limit[n], vram)


def time_fits(slot: NodeSlot, limit: float | None) -> bool:
    """May a job with time limit `limit` start on this node before its end (a pilot's
    allocation)? The limit plus the node's margin must fit in the time left."""
    if slot.time_left is None:
        return limit is not None or slot.untimed_ok
    if limit is None:  # untimed: not where it would have to leave at once
        return slot.untimed_ok and slot.time_left > slot.time_margin
    return limit + slot.time_margin <= slot.time_left


def _owner_may(slot: NodeSlot, job: PendingJob) -> bool:
    return slot.owner is not None and job.user == slot.owner and not job.forbid_busy


def _enough_memory(total: int | None, need: int) -> bool:
    return total is None or total >= need  # unknown might be enough


def _new_enough(have: tuple[int, int] | None, need: tuple[int, int], *, unknown: bool) -> bool:
    return unknown if have is None else have >= need


NEVER_FAILED = 1 << 62  # larger than any vram


def gpus_text(n: int) -> str:
    return "1 GPU" if n == 1 else f"{n} GPUs"


def _version(cuda: tuple[int, int] | None) -> str:
    return "unknown" if cuda is None else f"{cuda[0]}.{cuda[1]}"


def _names(slots: Sequence[NodeSlot]) -> str:
    return name_list([slot.name for slot in slots])


def name_list(names: Sequence[str]) -> str:
    """Node names for a reason in words: the first six, then an ellipsis."""
    return ", ".join(names) if len(names) <= 6 else ", ".join(names[:6]) + ", …"
