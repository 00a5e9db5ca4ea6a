"""`job show`'s artifact sync lines: the attempt named as one, and a sync that sent
nothing says so instead of a ratio over nothing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nvq.cli.render.artifacts import artifact_lines, sent_text


def _sync(**over: Any) -> SimpleNamespace:
    base = {"attempt": 1, "node": "ws1", "time": None, "files": 12, "bytes": 1_631_594_496,
            "sent": 10_000, "dedup_ratio": 163159.4, "mode": "", "fetched": 0}
    return SimpleNamespace(**{**base, **over})


def test_sync_lines_name_the_attempt_and_say_when_nothing_was_sent() -> None:
    doc = SimpleNamespace(artifact_notes=[], artifact_syncs=[
        _sync(), _sync(attempt=2, sent=0, dedup_ratio=1.63159e9)])
    first, second = artifact_lines(doc)[1:]  # type: ignore[arg-type]
    assert first.startswith("    attempt 1   ws1 ") and "(dedup 163,159x)" in first
    assert second.startswith("    attempt 2   ws1 ") and second.endswith("nothing new sent")
    assert "e+" not in second
    assert sent_text(2048, 2.0) == "sent 2.0 KiB (dedup 2x)"
    assert sent_text(2048, 1.0) == "sent 2.0 KiB"
    assert sent_text(2048, 2.5) == "sent 2.0 KiB (dedup 2.5x)"
