"""What a submit with `--vram` pays to look up what its command reached before
(`nvq.store.vram_peaks.reached`, on the store's thread), in process, over a queue.db
holding `--jobs` finished jobs of 100 commands with five events each (one with a
measured peak). Three lookups, each timed `--runs` times, in ONE JSON line:
`known` (a command with runs), `array` (a `{}` template matching all of them),
`unseen` (a command never run: a full pass over the jobs table).

    cd bench && ../.venv/bin/python vram_history.py [--jobs 10000] [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time

from common import emit, machine, summary_ms

from nvq.store.schema import migrate
from nvq.store.vram_peaks import reached

_JOB = (
    "INSERT INTO jobs (id, name, state, command, user, submitter, created_at, gpus_requested,"
    " vram_mb, priority, env, tags, note, after, after_any, attempt, gpus) VALUES (?, 'j',"
    " 'completed', ?, 'u', 'u', 0, 1, 0, 0, '{}', '[]', '', '[]', '[]', 1, '[]')"
)
_EVENT = "INSERT INTO events (time, kind, job_id, node, data) VALUES (0, ?, ?, 'n', ?)"
_KINDS = ("job_submitted", "job_dispatched", "job_started", "job_completed", "job_note")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    conn = sqlite3.connect(":memory:")
    migrate(conn)
    for i in range(1, args.jobs + 1):
        conn.execute(_JOB, (i, f"python train.py --lr {i % 100}"))
        for kind in _KINDS:
            data = {"attempt": 1, **({"peak_vram_mb": 5000} if kind == "job_completed" else {})}
            conn.execute(_EVENT, (kind, i, json.dumps(data)))
    conn.commit()
    out: dict[str, object] = {"bench": "vram_history", "jobs": args.jobs, **machine()}
    cases = {"known": "python train.py --lr 7", "array": "python train.py --lr {}",
             "unseen": "python never.py"}
    for name, command in cases.items():
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            reached(conn, command)
            times.append(time.perf_counter() - t)
        out[name] = summary_ms(times)
    emit(out)


if __name__ == "__main__":
    main()
