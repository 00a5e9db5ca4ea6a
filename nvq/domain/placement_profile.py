"""What one request profile (node prefix, CUDA, host memory, lane, busy owner, time
limit, in-place nodes) can use in a placement pass, why it could never fit, and what
already failed in the pass. Part of `nvq.domain.placement`; pure."""

from __future__ import annotations

from collections.abc import Sequence

from nvq.domain.placement_types import NodeSlot, PendingJob
from nvq.values import format_mib


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
    names = [slot.name for slot in slots]
    return ", ".join(names) if len(names) <= 6 else ", ".join(names[:6]) + ", …"
