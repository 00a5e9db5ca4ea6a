"""The runner's durable event journal.

Every durable event gets the next per-node seq and is appended and fsync'ed here
before it is sent, so an event the daemon never saw survives a runner or node crash
and is replayed on the next connection.

Layout of `<home>/journal/`:
  events.log  records: 4-byte big-endian length, 4-byte CRC32 of the payload, then the
              payload (`protocol.encode_payload` of the event). A torn or corrupt tail
              (crash mid-write) is cut off on load.
  meta.json   {"head": last seq ever written, "acked": last seq acknowledged}, padded
              with spaces to one fixed size and rewritten in place (one sector, one
              fsync, no new inode). It keeps seqs from repeating after the log is
              compacted, and lets a restarted runner skip events acknowledged before it
              stopped.

Acks are cumulative. When everything is acknowledged the log is truncated; when many
acknowledged records pile up in front of unacknowledged ones it is rewritten.

An ack is on the path from a job's exit to the next job's start (the daemon acks the
exit, then sends the next Start, which this runner's loop handles after the ack), so it
costs one fsync: the meta's. The truncation needs none of its own: until it reaches the
disk the log still holds records the durable meta already counts as acknowledged,
which a load skips, and the next append's fsync carries it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import struct
import uuid
import zlib
from pathlib import Path

from .protocol import (
    AttemptFenced,
    FrameError,
    JobExited,
    JobLost,
    JobSignalled,
    JobStarted,
    JournaledEvent,
    LaunchFailed,
    SetupPhase,
    decode_runner_payload,
    encode_payload,
)

log = logging.getLogger(__name__)
_REC = struct.Struct(">II")
_REWRITE_AFTER = 4096  # acknowledged records tolerated in front of live ones
_META_SIZE = 96  # meta.json's fixed size: two seqs of up to 30 digits and the padding


class Journal:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._log_path = directory / "events.log"
        self._meta_path = directory / "meta.json"
        self.head = 0
        self.acked = 0
        self._pending: list[JournaledEvent] = []  # unacknowledged, in seq order
        self._dead_records = 0  # acknowledged records still in events.log
        self._load()
        self.id = self._journal_id()
        self._fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._meta_fd: int | None = None

    # ------------------------------------------------------------ loading

    def _journal_id(self) -> str:
        """A random id made once per journal: if the journal is wiped, the daemon sees a
        new id and knows the seqs restarted."""
        path = self.dir / "id"
        try:
            return path.read_text().strip()
        except FileNotFoundError:
            pass
        new = uuid.uuid4().hex
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(new + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return new

    def _load(self) -> None:
        try:
            meta = json.loads(self._meta_path.read_text())
            self.head = int(meta.get("head", 0))
            self.acked = int(meta.get("acked", 0))
        except (OSError, ValueError, TypeError):
            pass
        try:
            data = self._log_path.read_bytes()
        except FileNotFoundError:
            data = b""
        good = 0
        while good + _REC.size <= len(data):
            size, crc = _REC.unpack_from(data, good)
            start, end = good + _REC.size, good + _REC.size + size
            if end > len(data) or zlib.crc32(data[start:end]) != crc:
                break
            try:
                event = decode_runner_payload(data[start:end])
            except FrameError:
                break
            good = end
            if not isinstance(event, (JobStarted, JobExited, JobLost, LaunchFailed, AttemptFenced,
                                      JobSignalled, SetupPhase)):
                continue
            seq = event.seq
            self.head = max(self.head, seq)
            if seq > self.acked:
                self._pending.append(event)
            else:
                self._dead_records += 1
        if good < len(data):
            # A torn last record: the event was never sent (fsync precedes send), so
            # dropping it loses nothing the daemon knows of.
            with open(self._log_path, "r+b") as f:
                f.truncate(good)
                os.fsync(f.fileno())

    # ------------------------------------------------------------ writing

    def next_seq(self) -> int:
        return self.head + 1

    def append(self, event: JournaledEvent) -> None:
        """Write `event` (whose seq must be `next_seq()`) durably."""
        if event.seq != self.head + 1:
            raise ValueError(f"journal seq {event.seq} out of order (head {self.head})")
        payload = encode_payload(event)
        size = os.fstat(self._fd).st_size
        try:
            record = _REC.pack(len(payload), zlib.crc32(payload)) + payload
            if os.write(self._fd, record) != len(record):
                raise OSError(errno.ENOSPC, "short write to the journal")
            os.fsync(self._fd)
        except OSError:
            # Leave no partial record behind: the next append must follow a whole one.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise
        self.head = event.seq
        self._pending.append(event)

    def ack(self, seq: int) -> None:
        if seq <= self.acked:
            return
        seq = min(seq, self.head)
        dropped = 0
        while self._pending and self._pending[0].seq <= seq:
            self._pending.pop(0)
            dropped += 1
        self.acked = seq
        self._dead_records += dropped
        if not self._pending or self._dead_records >= _REWRITE_AFTER:
            try:
                self._compact()
            except OSError as exc:
                # A full disk: the log keeps its acknowledged records for now (they
                # are skipped by seq on load) and the next ack tries again.
                log.warning("journal compaction failed: %s", exc)

    def unacked(self) -> list[JournaledEvent]:
        return list(self._pending)

    def close(self) -> None:
        os.close(self._fd)
        if self._meta_fd is not None:
            os.close(self._meta_fd)

    # ------------------------------------------------------------ compaction

    def _write_meta(self) -> None:
        text = json.dumps({"head": self.head, "acked": self.acked}).encode()
        if self._meta_fd is None:
            # Opened once: a meta written by an older runner (any size) is cut to ours.
            self._meta_fd = os.open(self._meta_path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.ftruncate(self._meta_fd, _META_SIZE)
        # One write at offset 0 of a file that stays one size: a reader sees the old
        # record or the new one, never a mix of lengths (JSON ignores the padding).
        os.pwrite(self._meta_fd, text.ljust(_META_SIZE - 1) + b"\n", 0)
        os.fsync(self._meta_fd)

    def _compact(self) -> None:
        # meta first: should we crash before the log is replaced, the old log is still
        # read correctly (acknowledged records are skipped by seq).
        self._write_meta()
        if not self._pending:
            os.ftruncate(self._fd, 0)  # durable with the next append (see the top)
        else:
            tmp = self._log_path.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                for event in self._pending:
                    payload = encode_payload(event)
                    f.write(_REC.pack(len(payload), zlib.crc32(payload)) + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._log_path)
            os.close(self._fd)
            self._fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._dead_records = 0
