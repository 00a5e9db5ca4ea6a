"""What a node kept of jobs its queue has forgotten (queue.db restored from an older
backup, or records lost with a damaged WAL): each attempt's `start.json` (the
`Start` it was given, written before launching), its attempt record and its exit
record, so the daemon can re-create the job instead of killing it as an orphan."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterable
from pathlib import Path

import msgspec

from .identity import _safe
from .jobfiles import JobDir
from .protocol import Start, StartRecord

START_FILE = "start.json"
_start = msgspec.json.Decoder(Start)


def write_start(d: JobDir, msg: Start) -> None:
    """Keep the attempt's `Start` beside it (private, like the rest of the job's
    directory): what the queue would need to know the job again."""
    data = msgspec.json.encode(msg)
    with contextlib.suppress(OSError):  # only recovery needs it: never fails a launch
        d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        # It holds the job's environment: the owner's alone (a umask only takes bits
        # away). Written in place, not renamed: a record cut short by a crash does
        # not decode and is skipped, and a rename per start is a new inode per job.
        fd = os.open(d.path / START_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def _dirs_of(jobs: Path, job_ids: Collection[int], queue_id: str) -> Iterable[tuple[int, Path]]:
    """The job directories of `job_ids` for `queue_id` (`<q>-<id>-<nonce>`), and the
    plain `<id>` ones of attempts dispatched without an identity."""
    prefix = _safe(queue_id)[:8] + "-" if queue_id else None
    try:
        entries = list(os.scandir(jobs))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.isdigit():
            number = int(name)
        elif prefix is not None and name.startswith(prefix):
            middle = name[len(prefix):].partition("-")[0]
            if not middle.isdigit():
                continue
            number = int(middle)
        else:
            continue
        if number in job_ids:
            yield number, Path(entry.path)


def records(
    jobs: Path, job_ids: Collection[int], queue_id: str, running: Collection[tuple[int, int]]
) -> list[StartRecord]:
    """The newest attempt kept of each of `job_ids` that has a start record.
    `running`: the (job, attempt) pairs whose process this runner watches now."""
    wanted = set(job_ids)
    best: dict[int, StartRecord] = {}
    for job_id, path in _dirs_of(jobs, wanted, queue_id):
        try:
            start = _start.decode((path / START_FILE).read_bytes())
        except (OSError, msgspec.DecodeError):
            continue
        if start.job_id != job_id:
            continue
        rec = JobDir.load_record(path / "attempt.json")
        if rec is None or rec.attempt != start.attempt:
            continue
        alive = (job_id, rec.attempt) in running
        code = None if alive else _read_int(path / "exit")
        ended_at = None
        if code is not None:
            with contextlib.suppress(OSError):
                ended_at = (path / "exit").stat().st_mtime
        found = StartRecord(
            start=start,
            started_at=rec.started_at,
            running=alive,
            pid=rec.pid,
            exit_code=code,
            signal=code - 128 if code is not None and 128 < code <= 192 else None,
            ended_at=ended_at,
            killed=rec.kill_reason not in (None, "timeout"),
        )
        old = best.get(job_id)
        if old is None or found.start.attempt > old.start.attempt:
            best[job_id] = found
    return [best[i] for i in sorted(best)]


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
