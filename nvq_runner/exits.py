"""How an attempt ended, read from its directory: the exit code and signal (from the
wrapper's exit record, else the waitpid status, else a hard kill's SIGKILL), and the
`JobExited` event with the job's last words (progress line, stderr tail, result)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from . import vram_peaks, workfiles
from .gpu.watch import faults_during
from .jobfiles import AttemptRecord, JobDir
from .protocol import ExitReason, JobExited


def exit_status(
    rec: AttemptRecord, d: JobDir, status: int | None
) -> tuple[int, int | None] | None:
    """(exit code, signal) in the shell's convention (128+N when killed by signal N),
    or None when nothing says how the process ended. `status`: waitpid's, for the
    runner's own child (None for an adopted attempt)."""
    code = d.read_exit()
    sig: int | None = None
    if code is not None:
        sig = code - 128 if 128 < code <= 128 + 64 else None
    elif status is not None:
        code, sig = (128 - status, -status) if status < 0 else (status, None)
    elif rec.killed_hard:
        code, sig = 128 + signal.SIGKILL, int(signal.SIGKILL)
    if code is None:
        return None
    return code, sig


def exited(
    rec: AttemptRecord, d: JobDir, code: int, sig: int | None, *, waited: bool,
    truncated: bool, oom_killed: bool = False,
) -> Callable[[int], JobExited]:
    """The event, read now and built from the seq the journal assigns. `waited`: the
    runner saw the exit itself (the end time is now, not the exit record's).
    `oom_killed`: the kernel's OOM killer killed a process of the job's cgroup.
    The faults that began on its cards while it ran go with it (gpu/watch.py)."""
    reason: ExitReason = "exit"
    if rec.kill_reason == "timeout":
        reason = "timeout"
    elif rec.kill_reason is not None:
        reason = "killed"
    ended = time.time() if waited else _mtime(d.exit)
    progress, (tail, stream) = d.progress(), d.output_tail()
    result, result_error = d.result_text(rec.max_result)
    files = workfiles.written(d.path)
    kept = _holds_anything(d.artifacts)
    card_faults = faults_during(rec.gpus, rec.started_at)
    peak = vram_peaks.read(d.path, rec.attempt)
    return lambda seq: JobExited(
        seq=seq, job_id=rec.job_id, attempt=rec.attempt, exit_code=code,
        signal=sig, ended_at=ended, reason=reason, progress=progress,
        stderr_tail=tail, stderr_tail_stream=stream, result=result, result_error=result_error,
        log_truncated=truncated, written=files, oom_killed=oom_killed,
        artifacts=kept, card_faults=card_faults, peak_vram_mb=peak,
    )


def _holds_anything(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()
