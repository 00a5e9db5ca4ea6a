"""Placement's own memory between passes: what it caches, what it last decided and
when it must look again. Owned by the placement loop (`nvq.daemon.main` makes one and
hands it to the loop and to the handlers that show it); nothing here is in queue.db,
so a restart starts it empty (the holds come back from the store's events,
`preempting.restore_holds`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvq.daemon.placement.waits import PassFacts
from nvq.domain.placement import NodeSlot, PendingJob
from nvq.domain.preemption import Hold
from nvq.domain.starvation import Reservation
from nvq.model import JobRecord

# node → (what its slot was made of, the slot): see slots.node_slots
SlotCache = dict[str, tuple[tuple[Any, ...], NodeSlot]]


class Memory:
    def __init__(self) -> None:
        # job id → (job struct, its placement fields, PendingJob): see placing.pending_of
        self.pending_cache: dict[int, tuple[JobRecord, dict[str, Any], PendingJob]] = {}
        self.slot_cache: SlotCache = {}
        self.placement_stats: dict[str, float] = {}  # the last pass, for `queue status`
        self.lane_blocked: dict[str, str] = {}  # lane → why its head is not starting
        self.reservation: Reservation | None = None  # a starving head's node
        # urgent job → the node kept for it while its victims stop (preempting.py)
        self.preempt_holds: dict[int, Hold] = {}
        self.preempt_holds_restored = False  # from the store's events, once after a start
        self.pass_facts: PassFacts | None = None  # what the last pass saw (`job why`)
        self.fair_share: dict[str, float] | None = None  # the last pass's standings
        # The loop's timers: the next start or end of an `nvq reserve` window, when the
        # waiting head starts to starve, when a user's day falls under its limit, the
        # earliest --begin still to come.
        self.reservations_change_at: float | None = None
        self.starves_at: float | None = None
        self.quota_wake_at: float | None = None
        self.begins_at: float | None = None

    def prune(self, live: Mapping[int, object]) -> None:
        """Drop the cached views of jobs no longer live; only once the cache has
        outgrown the live jobs, so that a pass does not pay a sweep each time."""
        if len(self.pending_cache) > 2 * len(live) + 1024:
            self.pending_cache = {
                i: v for i, v in self.pending_cache.items() if i in live
            }
