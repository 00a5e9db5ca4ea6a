"""The on-disk layout of one job under `<home>/jobs/<id>/` and its attempt record."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from functools import cached_property
from pathlib import Path
from typing import Optional

import msgspec

from .identity import dir_name
from .protocol import DEFAULT_MAX_LOG_SIZE, DEFAULT_MAX_RESULT, Start

TAIL_LINES = 20
RECORD_SIZE = 512  # attempt.json, padded: one sector (see JobDir.write_record)
TAIL_CHARS = 2000


class AttemptRecord(msgspec.Struct):
    """attempt.json: what a restarted runner needs to adopt or finish an attempt.
    Times are wall-clock (time.time()) so deadlines survive a runner restart."""

    job_id: int
    attempt: int
    started_at: float
    kill_grace: float
    boot_id: str
    pid: Optional[int] = None  # None while launching
    start_ticks: Optional[int] = None  # /proc/<pid>/stat field 22
    deadline: Optional[float] = None  # timeout: SIGTERM due
    signal: int = 0  # --signal: sent at `signal_at`, before the deadline (0: none)
    signal_at: Optional[float] = None
    signalled: bool = False  # sent (and journaled)
    kill_reason: Optional[str] = None  # "timeout" | "killed" | "fenced" once SIGTERM sent
    kill_at: Optional[float] = None  # SIGKILL due
    killed_hard: bool = False  # SIGKILL sent
    done: bool = False  # exit (or loss) journaled
    max_result: int = DEFAULT_MAX_RESULT  # bytes of result.json inlined in the exit event
    max_log_size: int = DEFAULT_MAX_LOG_SIZE  # cap of each of stdout.log, stderr.log
    log_truncated: bool = False  # a log's middle was cut to keep it under the cap
    queue_id: str = ""  # the attempt's identity beyond job_id (identity.py)
    nonce: str = ""
    port: Optional[int] = None  # $NVQ_PORT, held while the attempt lives (ports.py)
    reassign: bool = True  # False: `--no-reassign`, never fenced when the lease lapses
    # An image job: its runtime and container name, signalled beside the wrapper
    runtime: str = ""
    container: str = ""
    gpus: list[int] = []  # its cards: their faults during the attempt go with its exit


def new_record(msg: Start, boot_id: str) -> AttemptRecord:
    """The record of an attempt being launched now (its pid is not known yet)."""
    now = time.time()
    deadline = now + msg.timeout if msg.timeout is not None else None
    signal_at = None if deadline is None or not msg.signal else deadline - msg.signal_before
    return AttemptRecord(
        job_id=msg.job_id, attempt=msg.attempt, started_at=now,
        kill_grace=msg.kill_grace, boot_id=boot_id, deadline=deadline,
        signal=msg.signal if signal_at is not None else 0, signal_at=signal_at,
        max_result=msg.max_result, max_log_size=msg.max_log_size,
        queue_id=msg.queue_id, nonce=msg.nonce, reassign=msg.reassign, gpus=list(msg.gpus),
    )


_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(AttemptRecord)


class JobDir:
    # The files' paths are made on first use: a runner makes a JobDir for every
    # message about a job, and fifteen eager path joins were a visible share of a
    # busy runner's Python time, most of them never used by that message.
    def __init__(self, jobs_root: Path, job_id: int, queue_id: str = "", nonce: str = "") -> None:
        self.job_id = job_id
        self.queue_id = queue_id
        self.nonce = nonce
        self.path = jobs_root / dir_name(job_id, queue_id, nonce)

    @cached_property
    def script(self) -> Path:
        return self.path / "script"

    @cached_property
    def inner_script(self) -> Path:
        """An image job's own script (run in the container)."""
        return self.path / "container.sh"

    @cached_property
    def container_env(self) -> Path:
        """An image job's environment."""
        return self.path / "container.env"

    @cached_property
    def stdout(self) -> Path:
        return self.path / "stdout.log"

    @cached_property
    def stderr(self) -> Path:
        return self.path / "stderr.log"

    @cached_property
    def status(self) -> Path:
        return self.path / "status"

    @cached_property
    def result(self) -> Path:
        return self.path / "result.json"

    @cached_property
    def artifacts(self) -> Path:
        return self.path / "artifacts"

    @cached_property
    def inputs(self) -> Path:
        """$NVQ_INPUTS: prerequisites' artifacts."""
        return self.path / "inputs"

    @cached_property
    def attempt_json(self) -> Path:
        return self.path / "attempt.json"

    @cached_property
    def exit(self) -> Path:
        return self.path / "exit"

    @cached_property
    def wrapper_pid(self) -> Path:
        return self.path / "wrapper.pid"

    @cached_property
    def tombstone(self) -> Path:
        """The highest attempt killed before it started."""
        return self.path / "killed"

    def log(self, stream: str) -> Path:
        if stream == "setup":
            return self.path / "setup.log"  # what the job's --setup printed (jobworld)
        return self.stderr if stream == "stderr" else self.stdout

    def attempt_log(self, stream: str, attempt: int | None) -> Path | None:
        """The log of one attempt (None: the latest): `stdout.log` holds the latest
        attempt run here, `attempts/<n>/` the earlier ones; None when this node has no
        log of that attempt."""
        live = self.log(stream)
        if attempt is None:
            return live
        kept = self.path / "attempts" / str(attempt) / live.name
        if kept.exists():
            return kept
        rec = self.read_record()
        return live if rec is None or rec.attempt == attempt else None

    def make_way(self, attempt: int) -> None:
        """Before attempt `attempt` starts here: clear what the one before it left
        (exit, status, result, pid file) and move its logs to `attempts/<n>/`, so a
        new attempt does not overwrite them. Without a record no attempt was ever
        launched here (the record is written before the process exists), so there is
        nothing to clear: the common case costs a failed open and a stat."""
        rec = self.read_record()
        if rec is None and not self.attempt_json.exists():
            return
        for p in (self.exit, self.path / "exit.tmp", self.status, self.result, self.wrapper_pid,
                  self.path / "peak_vram.json"):
            p.unlink(missing_ok=True)
        if rec is None or rec.attempt == attempt:
            return
        kept = self.path / "attempts" / str(rec.attempt)
        kept.mkdir(mode=0o700, parents=True, exist_ok=True)
        for log in (self.stdout, self.stderr):
            with contextlib.suppress(FileNotFoundError):
                os.replace(log, kept / log.name)

    # ---------------------------------------------------------- attempt record

    def read_record(self) -> AttemptRecord | None:
        return self.load_record(self.attempt_json)

    @staticmethod
    def load_record(path: Path) -> AttemptRecord | None:
        try:
            return _dec.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError):
            return None

    def write_record(self, rec: AttemptRecord) -> None:
        """The first write of an attempt's record makes the file (write and rename);
        later ones overwrite it in place, padded with spaces to one 512-byte sector.
        Each replace-by-rename made a new inode and freed one, three times per job,
        and on a busy node that churn was a real part of the runner's work. One
        pwrite of a single sector is whole after a crash of the runner (a write to a
        file is never cut short by a kill) and, on disks that write a sector at once,
        after a power cut too; a longer record falls back to the rename."""
        data = _enc.encode(rec)
        if len(data) > RECORD_SIZE:
            _atomic_write(self.attempt_json, data)
            return
        data = data.ljust(RECORD_SIZE)
        try:
            fd = os.open(self.attempt_json, os.O_WRONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            _atomic_write(self.attempt_json, data)
            return
        try:
            if os.fstat(fd).st_size != RECORD_SIZE:  # an older runner's, or a long one
                _atomic_write(self.attempt_json, data)
            elif os.pwrite(fd, data, 0) != RECORD_SIZE:
                raise OSError(errno.ENOSPC, "short write of the attempt record")
        finally:
            os.close(fd)

    def read_tombstone(self) -> int:
        try:
            return int(self.tombstone.read_text().strip())
        except (OSError, ValueError):
            return 0

    def write_tombstone(self, attempt: int) -> None:
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _atomic_write(self.tombstone, f"{attempt}\n".encode())

    # ---------------------------------------------------------- what the job left

    def read_exit(self) -> int | None:
        try:
            return int(self.exit.read_text().strip())
        except (OSError, ValueError):
            return None

    def read_wrapper_pid(self) -> int | None:
        try:
            return int(self.wrapper_pid.read_text().strip())
        except (OSError, ValueError):
            return None

    def progress(self) -> str | None:
        return last_line(self.status)

    def result_text(self, limit: int) -> tuple[str | None, str | None]:
        """(text of result.json, None), or (None, why not) when it is over `limit`
        bytes: it then stays on the node. (None, None) when there is none."""
        try:
            with open(self.result, "rb") as f:
                # The job made it; it stays on the node as private as the rest.
                with contextlib.suppress(OSError):
                    os.fchmod(f.fileno(), 0o600)
                size = os.fstat(f.fileno()).st_size
                if size > limit:
                    return None, (f"result.json is {size_text(size)}, "
                                  f"over the {size_text(limit)} limit")
                data = f.read(limit + 1)
        except OSError:
            return None, None
        if len(data) > limit:  # grew while we looked
            return None, f"result.json is over the {size_text(limit)} limit"
        return data.decode(errors="replace"), None

    def output_tail(self) -> tuple[str, str]:
        """The end of stderr, or of stdout when stderr is empty, and which it is."""
        err = tail_text(self.stderr)
        if err:
            return err, "stderr"
        out = tail_text(self.stdout)
        return out, "stdout" if out else ""


def size_text(n: int) -> str:
    """1048576 → "1 MiB", 1572864 → "1.5 MiB"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _read_end(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read()
    except OSError:
        return b""


def last_line(path: Path) -> str | None:
    """The last non-empty line of a (small, often rewritten) status file."""
    for line in reversed(_read_end(path, 4096).splitlines()):
        if line.strip():
            return line.decode(errors="replace").strip()
    return None


def tail_text(path: Path, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    data = _read_end(path, chars * 4).decode(errors="replace")
    text = "\n".join(data.rstrip("\n").splitlines()[-lines:])
    return text[-chars:]
