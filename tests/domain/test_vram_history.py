"""What the same command reached before: the warning for a `--vram` below it and
the size `--vram auto` takes, and the store's reading of earlier attempts' peaks."""

from __future__ import annotations

import json
import sqlite3

from nvq.domain import vram_history as vh
from nvq.store.schema import migrate
from nvq.store.vram_peaks import reached


def test_the_auto_size_and_the_warning() -> None:
    seen = vh.Reached(peak_mb=5000, job_id=12, attempt=2)
    assert vh.auto_vram(seen) == 6144  # 5000 × 1.2 = 5.9 GiB, up to a whole GiB
    assert vh.below_note(4096, seen) == (
        "--vram 4 GiB is below the 4.9 GiB this command reached before (job 12, attempt 2); "
        "--vram auto would reserve 6 GiB"
    )
    assert vh.below_note(5000, seen) is None and vh.below_note(4096, None) is None
    assert vh.auto_note(seen) == (
        "--vram auto: 6 GiB, from the 4.9 GiB this command reached (job 12, attempt 2) × 1.2")


def test_an_array_template_matches_its_members_and_nothing_wider() -> None:
    assert vh.like_pattern("python t.py") is None
    assert vh.like_pattern("python t_1.py --i {} 50%") == "python t\\_1.py --i % 50\\%"


def test_the_store_reads_the_last_measured_peaks() -> None:
    conn = sqlite3.connect(":memory:")
    migrate(conn)
    rows = [(1, "python a.py"), (2, "python a.py"), (3, "python b.py"), (4, "x --i 0"),
            (5, "x --i 1")]
    for job_id, command in rows:
        conn.execute(
            "INSERT INTO jobs (id, name, state, command, user, submitter, created_at, "
            "gpus_requested, vram_mb, priority, env, tags, note, after, after_any, attempt, "
            "gpus) VALUES (?, 'j', 'completed', ?, 'u', 'u', 0, 1, 0, 0, '{}', '[]', '', "
            "'[]', '[]', 1, '[]')", (job_id, command))
    peaks = [(1, 1, 3000), (2, 1, 7000), (2, 2, 2000), (3, 1, 9000), (4, 1, 100), (5, 1, 200)]
    for job_id, attempt, peak in peaks:
        conn.execute(
            "INSERT INTO events (time, kind, job_id, node, data) VALUES (0, 'job_completed', "
            "?, 'n', ?)", (job_id, json.dumps({"attempt": attempt, "peak_vram_mb": peak})))
    assert reached(conn, "python a.py") == vh.Reached(peak_mb=7000, job_id=2, attempt=1)
    assert reached(conn, "x --i {}") == vh.Reached(peak_mb=200, job_id=5, attempt=1)
    assert reached(conn, "python c.py") is None
