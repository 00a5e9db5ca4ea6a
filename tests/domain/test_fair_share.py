"""Fair share, the pure part: decayed GPU-seconds, what an attempt weighs, the order
placement takes from it, and when `job why` blames it."""

from __future__ import annotations

import math

import pytest

from nvq.domain import fair_share as fs
from nvq.domain.placement import GpuSlot, NodeSlot, PendingJob, place

DAY = 86400.0


def test_a_run_charged_at_its_end_counts_its_early_hours_less() -> None:
    # One card for one half-life, charged at its end: ∫ 2^(−t/h) over [0, h] = h/(2 ln 2).
    assert fs.run_charge(1.0, 0.0, DAY, DAY, DAY) == pytest.approx(DAY / (2 * math.log(2)))
    # A short run is charged almost its full length; two cards twice that.
    assert fs.run_charge(2.0, 0.0, 60.0, 60.0, DAY) == pytest.approx(120.0, rel=1e-3)
    # Charged later, it has decayed by the time since it ended.
    late = fs.run_charge(1.0, 0.0, 60.0, 60.0 + DAY, DAY)
    assert late == pytest.approx(fs.run_charge(1.0, 0.0, 60.0, 60.0, DAY) / 2)
    assert fs.run_charge(1.0, 10.0, 10.0, 10.0, DAY) == 0.0


def test_the_ledger_decays_between_charges() -> None:
    entry = fs.charged(None, 3600.0, 0.0, DAY)
    entry = fs.charged(entry, 3600.0, DAY, DAY)  # the first hour is worth half by now
    assert entry == fs.Usage(5400.0, DAY)
    assert fs.value_at(entry, 2 * DAY, DAY) == pytest.approx(2700.0)
    # A clock that stepped back adds without decaying backwards.
    assert fs.charged(entry, 100.0, DAY - 50, DAY) == fs.Usage(5500.0, DAY)


def test_part_of_a_card_counts_as_its_share_of_the_card() -> None:
    assert fs.card_weight(1, 20 * 1024, [80 * 1024]) == 0.25
    assert fs.card_weight(2, 0, [80 * 1024, 80 * 1024]) == 2.0  # no --vram: whole cards
    assert fs.card_weight(1, 100 * 1024, [80 * 1024]) == 1.0  # never more than the card
    assert fs.card_weight(2, 1024, [None]) == 2.0  # sizes unknown: whole cards
    assert fs.card_weight(0, 1024, []) == 0.0  # CPU jobs use no card


def test_accounts_and_standings() -> None:
    assert fs.account_of("alice", "agent-7", "user") == "alice"
    assert fs.account_of("alice", "agent-7", "submitter") == "agent-7"
    assert fs.account_of("alice", "", "submitter") == "alice"
    ledger = {"user:alice": fs.Usage(7200.0, 0.0), "user:bob": fs.Usage(7200.0, 0.0)}
    running = [fs.Running("carol", 1.0, 0.0)]
    got = fs.standings(
        ["alice", "bob", "carol", "dave"],
        ledger,
        running,
        by="user",
        shares={"bob": 2.0},
        now=0.0 + 3600.0,
        halflife=1e12,  # no decay to speak of
    )
    assert got["alice"] == pytest.approx(7200.0)
    assert got["bob"] == pytest.approx(3600.0)  # twice the share, half the standing
    assert got["carol"] == pytest.approx(3600.0)  # what its running job used so far
    assert got["dave"] == 0.0


def _node(cards: int) -> NodeSlot:
    return NodeSlot("n", True, [GpuSlot(i, 24576, 0, 0) for i in range(cards)], 0, 0)


def _job(id: int, account: str, priority: int = 0) -> PendingJob:
    return PendingJob(id, priority, float(id), 1, 20000, account=account)


def test_the_account_that_used_less_goes_first_but_priority_still_wins() -> None:
    sweep = [_job(i, "alice") for i in range(1, 21)]
    late = [_job(21, "bob"), _job(22, "bob")]
    usage = {"alice": 3600.0, "bob": 0.0}
    result = place([_node(2)], [*sweep, *late], headroom_mb=0, max_cpu_jobs=4, usage=usage)
    assert [p.job_id for p in result.placements] == [21, 22]
    # Without fair share: submission order.
    plain = place([_node(2)], [*sweep, *late], headroom_mb=0, max_cpu_jobs=4)
    assert [p.job_id for p in plain.placements] == [1, 2]
    # A higher --priority still goes first; within alice, priority then submission.
    urgent = [_job(5, "alice", priority=1), *sweep[:4], *late]
    result = place([_node(2)], urgent, headroom_mb=0, max_cpu_jobs=4, usage=usage)
    assert [p.job_id for p in result.placements] == [5, 21]


def test_why_names_the_account_whose_jobs_go_first() -> None:
    standings = {"alice": 3600.0, "bob": 10.0, "carol": 0.0}
    waiting = [("alice", 0, 1.0), ("alice", 0, 2.0), ("bob", 0, 5.0), ("carol", 1, 9.0)]
    rivals = fs.rivals(waiting, standings)
    ahead = fs.ahead_by_share("alice", 0, 1.0, rivals, standings)
    assert ahead == fs.Rival("bob", 10.0, 5.0)
    # Bob submitted later and used less: nobody is ahead of him by fair share; carol's
    # job is ahead of everyone by priority, not by fair share.
    assert fs.ahead_by_share("bob", 0, 5.0, rivals, standings) is None
    # An alice job submitted after bob's: it waits behind bob by submission order anyway.
    assert fs.ahead_by_share("alice", 0, 6.0, rivals, standings) is None


def test_gpu_hours_read_at_a_glance() -> None:
    assert fs.gpu_hours(41 * 3600 + 100) == "41"
    assert fs.gpu_hours(2 * 3600) == "2"
    assert fs.gpu_hours(2.5 * 3600) == "2.5"
    assert fs.gpu_hours(36) == "0.01"
    assert fs.gpu_hours(0) == "0"
