"""Watching each card's health off the sampling path: one thread per card reads its
evidence (`GpuBackend.health`) every interval, so an NVML call that never returns
holds up only its own card's thread. A read running past the deadline marks the card
("NVML did not answer in time") and the sampler stops touching that card.

The runner asks two things: each card's faults now (every sample carries them), and
the faults that began on an attempt's cards while it ran (its `JobExited` carries
them, so the daemon decides "the card failed the job" from the runner's word alone,
whatever order the exit and the next sample arrive in). A fault already there when
the attempt began is not its cause: the card was either out of placement, or an
admin returned it with that evidence (`queue resume`). Runs on the node's Python (3.9+)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from typing import Optional

import msgspec

from ..protocol import GpuSample
from .base import GpuBackend, GpuFacts, remember_devices
from .health import CardEvidence, faults

log = logging.getLogger(__name__)

HUNG = "NVML did not answer in time"


class _Card:
    def __init__(self) -> None:
        self.faults: list[str] = []
        self.began: dict[str, float] = {}  # each current fault → when it was first seen
        self.past: list[tuple[str, float]] = []  # faults gone since, with when they began
        self.reading_since: Optional[float] = None  # a read in progress began then

    def settle(self, now_faults: list[str], now: float) -> None:
        for f in now_faults:
            self.began.setdefault(f, now)
        for f in [f for f in self.began if f not in now_faults]:
            self.past = [*self.past[-(PAST - 1):], (f, self.began.pop(f))]


PAST = 32  # faults gone again, remembered per card for the attempts that saw them


class HealthWatch:
    def __init__(self, backend: GpuBackend, count: int, interval: float,
                 deadline: float) -> None:
        self._backend = backend
        self._interval = interval
        self._deadline = deadline
        self._cards: list[_Card] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.watch(count)

    def watch(self, count: int) -> None:
        """Watch cards 0..count-1 (a card that appears later gets its thread then)."""
        with self._lock:
            new = range(len(self._cards), count)
            self._cards += [_Card() for _ in new]
        for i in new:
            threading.Thread(target=self._loop, args=(i,), name=f"nvq-health-{i}",
                             daemon=True).start()

    def _loop(self, index: int) -> None:
        card = self._cards[index]
        while not self._stop.is_set():
            with self._lock:
                card.reading_since = time.monotonic()
            try:
                evidence = self._backend.health(index)
            except Exception as exc:  # a backend bug costs this read, not the thread
                log.warning("health read of card %d failed: %s", index, exc)
                evidence = CardEvidence()
            with self._lock:
                card.reading_since = None
                card.faults = faults(evidence)
                card.settle(card.faults, time.time())
            self._stop.wait(self._interval)

    def _now(self, index: int) -> list[str]:
        """Card `index`'s faults, a hung read included. Holds the lock."""
        card = self._cards[index]
        out = list(card.faults)
        began = card.reading_since
        if began is not None and time.monotonic() - began > self._deadline:
            if HUNG not in out:
                out.append(HUNG)
            card.began.setdefault(HUNG, time.time())
        return out

    def current(self) -> dict[int, list[str]]:
        """Every card's faults now ([] for a healthy card)."""
        with self._lock:
            return {i: self._now(i) for i in range(len(self._cards))}

    def hung(self) -> set[int]:
        """Cards whose health read has not returned within the deadline: not touched."""
        with self._lock:
            return {i for i in range(len(self._cards)) if HUNG in self._now(i)}

    def during(self, cards: list[int], since: float) -> dict[int, list[str]]:
        """The faults that began on `cards` at or after `since` (wall clock), by card."""
        out: dict[int, list[str]] = {}
        with self._lock:
            for i in cards:
                if not 0 <= i < len(self._cards):
                    continue
                self._now(i)
                card = self._cards[i]
                if not card.past and not card.began:
                    continue  # the usual card: never a fault (asked at every exit)
                began = [*card.past, *card.began.items()]
                seen = list(dict.fromkeys(f for f, at in began if at >= since))
                if seen:
                    out[i] = seen
        return out

    def close(self) -> None:
        self._stop.set()  # a hung thread is a daemon thread: it dies with the runner


class Watched:
    """The runner's backend: the real one's figures, with each card's faults from
    the health watch, and hung cards left alone. The one per runner process is what
    `faults_during` asks (an attempt's exit, nvq_runner/exits.py)."""

    def __init__(self, backend: GpuBackend, env: Mapping[str, str]) -> None:
        global _active
        self.inner = backend
        self.name = backend.name
        self.watch = HealthWatch(backend, 0, _seconds(env, "NVQ_SAMPLE_INTERVAL", 2.0),
                                 _seconds(env, "NVQ_NVML_DEADLINE", 10.0))
        _active = self.watch

    def facts(self) -> GpuFacts:
        facts = self.inner.facts()
        self.watch.watch(len(facts.gpus))
        remember_devices(facts)
        return facts

    def sample(self, skip: Collection[int] = frozenset()) -> list[GpuSample]:
        sick = self.watch.current()
        hung = {i for i, f in sick.items() if HUNG in f}
        return [
            msgspec.structs.replace(g, faults=sick.get(g.index, []))
            for g in self.inner.sample({*skip, *hung})
        ]

    def health(self, index: int) -> CardEvidence:
        return self.inner.health(index)

    def close(self) -> None:
        self.watch.close()
        self.inner.close()


_active: Optional[HealthWatch] = None


def faults_during(cards: list[int], since: float) -> dict[int, list[str]]:
    """The faults that began on `cards` at or after `since`, by card, as the runner's
    health watch saw them ({} before it watches anything)."""
    return _active.during(cards, since) if _active is not None else {}


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        return float(env.get(name, default))
    except ValueError:
        return default
