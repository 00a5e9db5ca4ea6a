"""Pure placement: (cluster snapshot, pending jobs) → which job starts where.

No I/O and no clock, so the daemon can call it after every event and tests can call it
with anything. The rules (see DESIGN.md, "Placement"):

* Per card, `free = total − foreign − queue − headroom`, where `queue` is
  Σ max(reservation, actual use) of the queue's jobs on it (the caller computes it).
* Pending jobs are considered by priority (high first), then — with fair share — the
  usage of their account (least first, `usage`), then age, then id.
* A GPU job needs `gpus` distinct schedulable cards on one accepting node, each with
  `free ≥ vram_mb`; a CPU job (`gpus == 0`) needs an accepting node running fewer than
  `max_cpu_jobs` CPU-only jobs. Optional: `--node` prefix, minimum driver CUDA version,
  host memory.
* Among nodes that fit, the least loaded wins: fewest running jobs per schedulable card,
  then most free GPU memory, then name — but an idle node always before a busy one
  (its owner is at the keyboard). On a busy node only its owner's own jobs are placed,
  and not those of an owner who forbade it (`forbid_busy`). On that node, the fitting cards with the most
  free memory are taken (ties: lower index), quiet ones first (card_choice.py).
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
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence

from nvq.domain.card_choice import busy_note, busyness, first, pick, quiet
from nvq.domain.placement_profile import NEVER_FAILED, Profile, gpus_text
from nvq.domain.placement_types import (
    GpuSlot,
    NodeSlot,
    PendingJob,
    Placement,
    PlacementResult,
    Unschedulable,
)
from nvq.domain.quotas import Caps
from nvq.values import format_mib

__all__ = ["GpuSlot", "NodeSlot", "PendingJob", "Placement", "PlacementResult", "Unschedulable",
           "dispatch_key", "place"]

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
        # (−free, index) sorts by free descending, then index ascending: the order in
        # which cards are taken, and cards[n−1] is the n-th most free card.
        self.cards = sorted(
            (g.foreign_mb + g.queue_mb + headroom_mb - g.total_mb, g.index)
            for g in slot.gpus
            if g.schedulable and not g.out
        )
        # index → utilisation of the cards busy with foreign work (usually none)
        self.busy_cards = {g.index: g.foreign_util for g in slot.gpus if busyness(g.foreign_util)}
        self._capacity = max(1, len(self.cards))
        self.total_free = sum(-neg for neg, _ in self.cards if neg < 0)  # overdrawn cards: 0
        self.key = self._key(slot.running_jobs, position)

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
        none it must keep off, its lane's card."""
        only, closed, name = job.only, job.closed, self.name
        return [
            (neg, index)
            for neg, index in self.cards
            if (only is None or (name, index) in only)
            and (name, index) not in closed
            and (job.gpu is None or index == job.gpu)
        ]

    def take_cards(self, picked: list[int], vram_mb: int, memory_mb: int) -> list[int]:
        """Deduct a job given these cards (each had free ≥ vram); [] for a CPU job."""
        if vram_mb:
            self.cards = sorted(
                (neg + vram_mb, index) if index in picked else (neg, index)
                for neg, index in self.cards
            )
            self.total_free -= vram_mb * len(picked)
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
            self.cards = sorted(
                (neg + vram_mb, index) if index == pin else (neg, index)
                for neg, index in self.cards
            )
            self.total_free -= vram_mb
            vram_mb = 0
        if vram_mb:
            self.cards[:gpus] = [(neg + vram_mb, index) for neg, index in chosen]
            self.cards.sort()
            # Chosen cards had free ≥ vram, so none goes below 0: the clamped sum drops
            # by exactly vram per card.
            self.total_free -= vram_mb * gpus
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
        if job.only is not None or job.closed:
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
        """A job that may use only some cards (reservations): each node it may go to is
        looked at card by card; the least loaded that fits wins, as on the fast path."""
        gpus = 1 if job.gpu is not None else job.gpus
        vram = job.vram_mb if gpus else 0
        # Capacity only shrinks during a pass: once (gpus, vram) did not fit these cards,
        # no job asking as much or more will (the fast path's memo, per restriction).
        memo = (id(profile), gpus, job.memory_mb, job.only, job.closed)
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
        cards_taken = node.take_cards(picked, vram, job.memory_mb)
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
                f"needs {job.gpus} GPUs with {format_mib(job.vram_mb)} each; the best "
                f"{job.gpus} cards on {where} hold {format_mib(best)} each {after}"
            )
        return None
