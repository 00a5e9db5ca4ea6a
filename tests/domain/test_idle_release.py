from __future__ import annotations

from nvq.domain.idle_release import cards_active, decide


def test_warned_after_idle_then_ended_after_grace() -> None:
    assert decide(now=59, active_at=0, warned_at=None, idle=60, grace=10) == "none"
    assert decide(now=60, active_at=0, warned_at=None, idle=60, grace=10) == "warn"
    assert decide(now=65, active_at=0, warned_at=60, idle=60, grace=10) == "none"
    assert decide(now=70, active_at=0, warned_at=60, idle=60, grace=10) == "end"


def test_activity_after_the_warning_calls_it_off_and_zero_turns_it_off() -> None:
    assert decide(now=70, active_at=66, warned_at=60, idle=60, grace=10) == "unwarn"
    assert decide(now=10**9, active_at=0, warned_at=None, idle=0, grace=10) == "none"


def test_cards_are_active_when_busy_or_their_memory_moves() -> None:
    assert not cards_active([0, None], 500, 500)
    assert not cards_active([], 0, None)
    assert cards_active([0, 3], 500, 500)
    assert cards_active([0], 600, 500)


def test_a_sessions_progress_line_says_how_long_its_terminal_is_idle() -> None:
    from nvq_runner.ptyhost import idle_line

    assert idle_line(59) == "interactive: active"
    assert idle_line(60 * 12 + 5) == "interactive: idle 12m"
    assert idle_line(3600 * 3) == "interactive: idle 3h"
