"""Every attempt of a job — node, GPUs, start, end, how it ended — derived from the
job's events (pure). Each transition commits its event in the same transaction, so
this history is exactly as durable as the job's state and needs no table of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from nvq.domain.contention import EVENT as CONTENTION_EVENT
from nvq.domain.contention import Contention
from nvq.model import Event

# event kind → how the attempt ended, in one word
_ENDINGS = {
    "job_completed": "completed",
    "job_failed": "failed",
    "job_timeout": "timeout",
    "job_lost": "lost",
    "job_retried": "lost (retried)",
    "job_card_failed": "card failed (requeued)",
    "job_reassigned": "reassigned",
    "job_preempted": "preempted",
    "job_cancelled": "cancelled",
    "job_paused": "paused",
    "launch_failed": "launch failed",
    "setup_failed": "setup failed",
    "attempt_superseded": "superseded",
    "job_moved": "moved",
    "attempt_fenced": "fenced",  # its runner stopped it: the lease lapsed (fencing.py)
}


def ending_of(kind: str) -> str | None:
    """How an attempt ended, in one word, from the event that ended it (None: that
    event does not end one)."""
    return _ENDINGS.get(kind)


class Attempt(msgspec.Struct, kw_only=True):
    attempt: int
    node: str | None
    gpus: list[int] = []
    dispatched_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    outcome: str | None = None  # None while it runs
    reason: str | None = None
    exit_code: int | None = None
    # its result.json, once a requeue kept it (the job's own `result` is the latest's)
    result: Any = None
    # what shared its cards while it ran (nvq.domain.contention), once it ended
    contention: Contention | None = None
    vram_mb: int | None = None  # its --vram reservation (None: whole cards)
    # a retry after a GPU out-of-memory raised it from this (nvq.domain.gpu_oom)
    vram_was_mb: int | None = None
    # the most GPU memory its processes held at once: on its fullest card, and by card
    peak_vram_mb: int | None = None
    peak_vram_by_card: dict[int, int] = {}


def derive(events: Iterable[Event]) -> list[Attempt]:
    out: list[Attempt] = []
    by_number: dict[int, Attempt] = {}
    resized: int | None = None  # the reservation before an OOM retry raised it
    for ev in events:
        data: dict[str, Any] = ev.data or {}
        if ev.kind == "job_dispatched":
            n = int(data.get("attempt", len(out) + 1))
            att = Attempt(
                attempt=n, node=ev.node, gpus=list(data.get("gpus", [])), dispatched_at=ev.time,
                vram_mb=data.get("vram_mb"), vram_was_mb=resized,
            )
            resized = None
            out.append(att)
            by_number[n] = att
            continue
        if ev.kind == "job_retried" and data.get("vram_was_mb") is not None:
            resized = int(data["vram_was_mb"])
        if ev.kind == "job_changed":
            resized = None  # edited since: the next reservation is the user's
        number = data.get("attempt")
        found = by_number.get(int(number)) if number is not None else (out[-1] if out else None)
        if found is None:
            continue
        att = found
        if data.get("peak_vram_by_card"):
            att.peak_vram_mb = int(data.get("peak_vram_mb", 0))
            att.peak_vram_by_card = {int(k): int(v) for k, v in data["peak_vram_by_card"].items()}
        if ev.kind == "job_started":
            att.started_at = ev.time
        elif ev.kind == "job_requeued":
            att.result = data.get("result")
        elif ev.kind == CONTENTION_EVENT:
            att.contention = msgspec.convert(data.get("contention"), Contention)
        elif ev.kind == "job_exit_after_settle":
            att.exit_code = data.get("exit_code", att.exit_code)
        elif ev.kind == "attempt_fenced" and att.outcome == "reassigned" and data.get("fenced_at"):
            # Reassigned while its node was silent, the attempt ran on until its runner
            # stopped it (the lease lapsed): that, not the reassignment, is its end.
            att.ended_at = float(data["fenced_at"])
        elif ev.kind in _ENDINGS and att.outcome in (None, data.get("overrides")):
            # `overrides`: an exit heard after the queue had guessed this attempt's end.
            if ev.kind in ("job_paused", "job_moved") and data.get("was") != "running":
                continue  # a waiting job paused or moved: no attempt ended
            att.outcome = _ENDINGS[ev.kind]
            if ev.kind == "job_retried" and data.get("oom"):
                att.outcome = "OOM-killed (retried)"
            if ev.kind == "job_retried" and data.get("gpu_oom"):
                att.outcome = "out of GPU memory (retried)"
            att.ended_at = ev.time
            att.exit_code = data.get("exit_code")
            att.reason = data.get("reason") or data.get("error")
    return out
