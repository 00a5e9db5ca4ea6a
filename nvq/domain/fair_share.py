"""Fair share: who has used the cards lately, as a number placement can order by. Pure.

An account's usage is GPU-seconds — each card an attempt held, for as long as it
held it, weighted by the part of the card it reserved (`--vram` / the card's memory,
at most 1; a job that reserves no memory counts whole cards; CPU jobs count 0) —
decayed with a half-life: a GPU-hour used one half-life ago counts half. Dividing by
the account's `share` gives the figure placement orders by (lowest first, among jobs
of equal priority).

The ledger is kept incrementally: each account's decayed total as of the time it was
last charged. Charging an attempt adds the integral of its weight, decayed from each
instant it ran to the charging time, so a ten-hour job charged at its end counts its
first hours less than its last, exactly as a continuous charge would have.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import msgspec

LN2 = math.log(2)


class Usage(msgspec.Struct, frozen=True):
    """An account's decayed GPU-seconds as of `at`."""

    gpu_seconds: float
    at: float


def decay(value: float, elapsed: float, halflife: float) -> float:
    return value * math.pow(2.0, -max(0.0, elapsed) / halflife)


def run_charge(weight: float, start: float, end: float, now: float, halflife: float) -> float:
    """∫ weight · 2^(−(now − s)/halflife) ds over [start, end]: a run of `weight` cards
    from `start` to `end`, decayed to `now` (≥ end)."""
    if weight <= 0 or end <= start:
        return 0.0
    late = math.pow(2.0, -(now - end) / halflife)
    early = math.pow(2.0, -(now - start) / halflife)
    return weight * halflife / LN2 * (late - early)


def card_weight(cards: int, vram_mb: int, card_mb: Sequence[int | None]) -> float:
    """How many cards' worth an attempt holds: per card, the reserved memory over the
    card's memory (at most 1), or a whole card when it reserved none or the card's size
    is unknown. `card_mb` holds the size of each of its cards (may be shorter)."""
    total = 0.0
    for i in range(cards):
        size = card_mb[i] if i < len(card_mb) else None
        total += min(1.0, vram_mb / size) if vram_mb > 0 and size else 1.0
    return total


def charged(old: Usage | None, charge: float, now: float, halflife: float) -> Usage:
    """The ledger entry after adding `charge` (already decayed to `now`)."""
    if old is None:
        return Usage(charge, now)
    if now < old.at:  # a clock that stepped back: add without decaying backwards
        return Usage(old.gpu_seconds + charge, old.at)
    return Usage(decay(old.gpu_seconds, now - old.at, halflife) + charge, now)


def value_at(entry: Usage | None, now: float, halflife: float) -> float:
    if entry is None:
        return 0.0
    return decay(entry.gpu_seconds, now - entry.at, halflife)


def account_of(user: str, submitter: str, by: str) -> str:
    """Whose usage a job counts against: the OS user, or (`by = "submitter"`) its
    NVQ_SUBMITTER label, falling back to the user when it has none."""
    if by == "submitter":
        return submitter or user
    return user


def ledger_key(by: str, account: str) -> str:
    """Both ways of counting are kept, so changing `fair_share_by` loses no history."""
    return f"{by}:{account}"


class Running(msgspec.Struct, frozen=True):
    """A running attempt, as fair share sees it."""

    account: str
    weight: float
    since: float


def standings(
    accounts: Iterable[str],
    ledger: Mapping[str, Usage],
    running: Iterable[Running],
    *,
    by: str,
    shares: Mapping[str, float],
    now: float,
    halflife: float,
) -> dict[str, float]:
    """Each account's usage so far (the ledger, plus what its running attempts used
    until `now`) over its share: placement's order among equal priorities."""
    wanted = set(accounts)
    used = {a: value_at(ledger.get(ledger_key(by, a)), now, halflife) for a in wanted}
    for run in running:
        if run.account in used:
            used[run.account] += run_charge(run.weight, run.since, now, now, halflife)
    return {a: v / max(shares.get(a, 1.0), 1e-9) for a, v in used.items()}


def gpu_hours(gpu_seconds: float) -> str:
    """A usage figure as `job why` says it: 41, 2.5, 0.01."""
    hours = gpu_seconds / 3600
    if hours >= 10:
        return f"{hours:.0f}"
    if hours >= 0.1:
        return f"{hours:.1f}".removesuffix(".0")
    return f"{hours:.2f}".rstrip("0").rstrip(".") or "0"


class Rival(msgspec.Struct, frozen=True):
    """An account with jobs waiting at some priority, as `job why` weighs it."""

    account: str
    standing: float  # usage over share
    latest: float  # the latest dispatch rank among its waiting jobs at that priority


def rivals(
    waiting: Iterable[tuple[str, int, float]], standings: Mapping[str, float]
) -> dict[int, list[Rival]]:
    """Per priority, each account's standing and its latest waiting job, from the
    (account, priority, rank) of the jobs a pass left waiting."""
    latest: dict[tuple[int, str], float] = {}
    for account, priority, rank in waiting:
        key = (priority, account)
        if rank > latest.get(key, -math.inf):
            latest[key] = rank
    out: dict[int, list[Rival]] = {}
    for (priority, account), rank in latest.items():
        out.setdefault(priority, []).append(Rival(account, standings.get(account, 0.0), rank))
    return out


def ahead_by_share(
    account: str,
    priority: int,
    rank: float,
    by_priority: Mapping[int, Sequence[Rival]],
    standings: Mapping[str, float],
) -> Rival | None:
    """The account, if any, whose jobs of the same priority go before this job only
    because it used less lately (it submitted later): the least used of them."""
    mine = standings.get(account)
    if mine is None:
        return None
    best: Rival | None = None
    for r in by_priority.get(priority, ()):
        if r.account == account or r.standing >= mine or r.latest <= rank:
            continue
        if best is None or r.standing < best.standing:
            best = r
    return best
