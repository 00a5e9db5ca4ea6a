"""Limits per account: what one user may hold at once and use in a day. Pure.

`max_running_gpus` and `max_running_jobs` cap what a user's running jobs hold;
`max_gpu_hours` caps the GPU-hours their attempts used in the last 24 hours (a rolling
day: an attempt that ran from 23 hours ago for two hours counts its last hour only).
A job its user's limit holds back waits with the limit's reason (`QuotaGPUs`,
`QuotaJobs`, `QuotaHours`); placement is told how many cards and jobs each user may
still start (`Caps`) and counts down as it places.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

DAY = 86400.0

QUOTA_GPUS = "QuotaGPUs"
QUOTA_JOBS = "QuotaJobs"
QUOTA_HOURS = "QuotaHours"


class Span(msgspec.Struct, frozen=True):
    """An attempt's use of cards: `weight` cards from `start` to `end`."""

    start: float
    end: float
    weight: float


def day_use(spans: Iterable[Span], now: float, window: float = DAY) -> float:
    """GPU-seconds the spans used within the `window` seconds before `now`."""
    since = now - window
    total = 0.0
    for s in spans:
        overlap = min(s.end, now) - max(s.start, since)
        if overlap > 0:
            total += s.weight * overlap
    return total


def free_at(spans: Iterable[Span], limit: float, now: float, window: float = DAY) -> float:
    """The first time from `now` on when the rolling use falls below `limit`
    GPU-seconds, if nothing more runs (the use only shrinks then: a piecewise linear
    function, so the crossing is found between two of its corners)."""
    kept = [s for s in spans if s.end > now - window]
    if day_use(kept, now, window) < limit:
        return now
    corners = sorted({c for s in kept for c in (s.start + window, s.end + window) if c > now})
    before_t, before_v = now, day_use(kept, now, window)
    for t in corners:
        v = day_use(kept, t, window)
        if v < limit:
            # Linear between the corners: where it reaches the limit, a hair past.
            slope = (before_v - v) / (t - before_t)
            return before_t + (before_v - limit) / slope + 1e-3 if slope > 0 else t
        before_t, before_v = t, v
    return corners[-1] if corners else now


class Standing(msgspec.Struct, kw_only=True):
    """One user against their limits, before (and, once placement counts down, after)
    a pass."""

    user: str
    running_gpus: int
    running_jobs: int
    max_gpus: int | None
    max_jobs: int | None
    day_gpu_seconds: float = 0.0
    max_gpu_hours: float | None = None
    hours_free_at: float | None = None  # when the rolling day falls below the limit

    @property
    def hours_over(self) -> bool:
        return self.max_gpu_hours is not None and self.day_gpu_seconds >= self.max_gpu_hours * 3600

    def gpus_left(self) -> int | None:
        return None if self.max_gpus is None else self.max_gpus - self.running_gpus

    def jobs_left(self) -> int | None:
        return None if self.max_jobs is None else self.max_jobs - self.running_jobs

    def blocks(self, gpus: int) -> str | None:
        """The reason a job of this user asking `gpus` cards may not start, or None."""
        if self.hours_over and gpus > 0:  # a GPU-hour limit holds no CPU-only job
            return QUOTA_HOURS
        jobs = self.jobs_left()
        if jobs is not None and jobs <= 0:
            return QUOTA_JOBS
        cards = self.gpus_left()
        if cards is not None and gpus > cards:
            return QUOTA_GPUS
        return None

    def took(self, gpus: int) -> None:
        self.running_gpus += gpus
        self.running_jobs += 1

    def detail(self, reason: str, gpus: int) -> str:
        if reason == QUOTA_HOURS:
            used = self.day_gpu_seconds / 3600
            words = (
                f"{self.user} used {used:.1f} GPU-h in the last day, "
                f"at most {self.max_gpu_hours:g} (max_gpu_hours)"
            )
            return words
        if reason == QUOTA_JOBS:
            jobs = _count(self.running_jobs, "job")
            return f"{self.user} runs {jobs}, at most {self.max_jobs} (max_running_jobs)"
        return (
            f"{self.user} holds {_count(self.running_gpus, 'GPU')}, at most {self.max_gpus} "
            f"(max_running_gpus); this job needs {gpus}"
        )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


class Caps:
    """How many cards and jobs each limited user may still start in one pass;
    placement asks `allows` before it places a job and calls `took` after."""

    def __init__(self, standings: Iterable[Standing]) -> None:
        self._left: dict[str, list[float]] = {}
        for s in standings:
            gpus, jobs = s.gpus_left(), s.jobs_left()
            self._left[s.user] = [
                math.inf if gpus is None else gpus,
                math.inf if jobs is None else jobs,
            ]

    def __bool__(self) -> bool:
        return bool(self._left)

    def copy(self) -> Caps:
        out = Caps(())
        out._left = {user: list(left) for user, left in self._left.items()}
        return out

    def allows(self, user: str, gpus: int) -> bool:
        left = self._left.get(user)
        return left is None or (left[1] >= 1 and left[0] >= gpus)

    def took(self, user: str, gpus: int) -> None:
        left = self._left.get(user)
        if left is not None:
            left[0] -= gpus
            left[1] -= 1
