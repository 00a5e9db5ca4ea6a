"""Each running attempt's peak GPU memory per card, from the samples of its own
processes, kept in its job directory (`peak_vram.json`) so that an attempt adopted by
a restarted runner keeps the peak it had reached, and read there when it ends.

The file is written only when a peak grows, and before the sample that showed it goes
out: a job that waits for the file (the fake backend's `fakeload --until-sampled`)
knows its use was counted. Blocking (small file writes): called from the sampler's
thread."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from .gpu import GpuBackend
from .jobfiles import JobDir
from .node_sample import take_sample
from .protocol import Sample

FILE = "peak_vram.json"


class PeakRecord(msgspec.Struct):
    attempt: int
    cards: dict[int, int] = {}  # card index → MiB, the most its processes held at once


def use_by_job(sample: Sample) -> dict[int, dict[int, int]]:
    """job id → card → MiB its processes hold in this sample (several processes of a
    job on one card add up; a process whose memory the driver hides counts nothing)."""
    out: dict[int, dict[int, int]] = {}
    for g in sample.gpus:
        for p in g.processes:
            if p.job_id is None or p.used_mb is None:
                continue
            cards = out.setdefault(p.job_id, {})
            cards[g.index] = cards.get(g.index, 0) + p.used_mb
    return out


def grown(before: dict[int, int], now: dict[int, int]) -> dict[int, int] | None:
    """The new peaks when `now` passes `before` on some card, else None. Pure."""
    merged = dict(before)
    for card, mib in now.items():
        if mib > merged.get(card, 0):
            merged[card] = mib
    return merged if merged != before else None


class PeakRecorder:
    """The peaks of the attempts running now, as their files hold them."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], dict[int, int]] = {}

    def sample(
        self, backend: GpuBackend, sessions: dict[int, int], runs: dict[int, tuple[int, JobDir]]
    ) -> Sample:
        """One sample of the node (`take_sample`; `runs`: job id → its attempt and
        directory), each running attempt's peaks recorded from it first and sent
        with it."""
        sample = take_sample(backend, sessions, {job: d for job, (_, d) in runs.items()})
        self.record(sample, {job: (n, d.path) for job, (n, d) in runs.items()})
        peaks = {job: dict(cards) for (job, _), cards in self._known.items() if cards}
        return msgspec.structs.replace(sample, peaks=peaks)

    def record(self, sample: Sample, running: dict[int, tuple[int, Path]]) -> None:
        """`running`: job id → its attempt and directory."""
        use = use_by_job(sample)
        alive = set()
        for job_id, (attempt, path) in running.items():
            key = (job_id, attempt)
            alive.add(key)
            if key not in self._known:
                self._known[key] = read(path, attempt)  # adopted: what it had reached
            merged = grown(self._known[key], use.get(job_id, {}))
            if merged is None:
                continue
            self._known[key] = merged
            with contextlib.suppress(OSError):  # a job dir removed under it: no peak
                _write(path, PeakRecord(attempt, merged))
        for key in set(self._known) - alive:
            del self._known[key]


def read(job_dir: Path, attempt: int) -> dict[int, int]:
    """The attempt's peaks as its file holds them ({} when none was seen, or the
    file is an earlier attempt's)."""
    try:
        rec = msgspec.json.decode((job_dir / FILE).read_bytes(), type=PeakRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    return dict(rec.cards) if rec.attempt == attempt else {}


def _write(job_dir: Path, rec: PeakRecord) -> None:
    path = job_dir / FILE
    tmp = job_dir / f".{FILE}.tmp"
    tmp.write_bytes(msgspec.json.encode(rec))
    os.replace(tmp, path)
