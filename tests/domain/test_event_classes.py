"""The words `queue events --follow --kind` filters on, from an event's kind (pure)."""

from __future__ import annotations

from nvq.domain.alerts import ALERT_KINDS
from nvq.domain.event_classes import CLASSES, END_STATES, classes_of, unknown_classes


def test_each_final_state_is_an_end_and_only_bad_ones_fail() -> None:
    assert classes_of("job_completed", 1) == ["end"]
    assert classes_of("job_cancelled", 1) == ["end"]
    for kind in ("job_failed", "job_timeout", "job_lost", "job_unschedulable",
                 "launch_failed", "setup_failed"):
        assert classes_of(kind, 1)[:2] == ["end", "fail"], kind
    assert set(END_STATES.values()) == {"completed", "failed", "timeout", "cancelled", "lost"}


def test_a_retried_job_has_not_ended() -> None:
    for kind in ("job_retried", "job_requeued", "job_card_failed", "job_reassigned",
                 "job_preempted"):
        words = classes_of(kind, 1)
        assert "retry" in words and "end" not in words, kind


def test_alerts_starts_and_node_events() -> None:
    assert all("alert" in classes_of(kind, None) for kind in ALERT_KINDS)
    assert classes_of("job_started", 1) == ["start"]
    assert classes_of("job_time_limit_80", 1) == ["time-limit-80"]
    assert classes_of("node_up", None) == ["node"]
    assert classes_of("job_note", 1) == []


def test_unknown_words() -> None:
    assert unknown_classes(["end", "ends", "fail"]) == ["ends"]
    assert unknown_classes(list(CLASSES)) == []
