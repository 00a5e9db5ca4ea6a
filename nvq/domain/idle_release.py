"""Idle release of interactive sessions: a session whose terminal has had no input
and whose cards no activity for `idle` seconds is warned, then ended `grace` seconds
later unless someone comes back. Pure: the daemon's watcher (nvq.daemon.sessions.sessions)
feeds it times and does what it says."""

from __future__ import annotations

from typing import Literal

Action = Literal["none", "warn", "end", "unwarn"]


def decide(now: float, active_at: float, warned_at: float | None, idle: float,
           grace: float) -> Action:
    """`active_at`: the last keystroke or card activity; `warned_at`: when the warning
    went out (None: not warned). `idle` 0 turns release off."""
    if idle <= 0:
        return "none"
    if warned_at is not None:
        if active_at > warned_at:
            return "unwarn"  # someone came back: start over
        return "end" if now - warned_at >= grace else "none"
    return "warn" if now - active_at >= idle else "none"


def cards_active(utils: list[int | None], memory_mb: int, last_memory_mb: int | None) -> bool:
    """Do the session's cards show activity: any utilisation, or the session's own GPU
    memory changed since the last look?"""
    return any(u for u in utils) or (last_memory_mb is not None and memory_mb != last_memory_mb)
