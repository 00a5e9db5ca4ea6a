"""The runner ⇄ daemon wire protocol: msgspec structs and their framing.

Every frame is a 4-byte big-endian length followed by a msgpack-encoded struct from
one of two tagged unions: `RunnerMsg` (runner → daemon) and `DaemonMsg`
(daemon → runner). This module is imported by both sides and depends on msgspec
alone, so a node needs nothing of the daemon to run the runner. The messages live in
`protocol_events` (runner → daemon) and `protocol_commands` (daemon → runner); this
module exports them all (`__all__`, with the artifact messages of `artifact_wire`
that travel in the same unions) and holds the framing, so callers write `p.Hello`.

Durable runner events (`JobStarted`, `JobExited`, `JobLost`, `LaunchFailed`,
`AttemptFenced`, `JobSignalled`) carry a
per-node `seq`. The runner journals each one before sending it and keeps it until the
daemon acknowledges it (`Ack(seq)`, cumulative); after a reconnect the runner sends
`Hello` and then replays every unacknowledged event in order. The daemon stores the
last applied `seq` per node in the same transaction as the transition, so a replayed
event is applied exactly once. `Hello`, `Sample` and `LogData` are not journaled:
they describe the present and are worthless once stale.

Leases: a runner whose `Hello` lists the "lease" feature gets a `Heartbeat(lease)`
on every idle link every few seconds; any daemon frame renews its lease. One that
hears nothing for `lease` seconds stops its reassignable jobs itself and journals
`AttemptFenced` for each, so a partition never leaves a job running in two places.
Older runners lack the feature and never get the frame; older daemons never send it,
and a runner that was never told a lease never fences.
"""

from __future__ import annotations

import struct

import msgspec

from .artifact_wire import (
    ArtifactsTreeQuery,
    ArtifactsTreeReply,
    ChunkBytes,
    ReadChunks,
    SyncWanted,
)
from .image_wire import CachedImage, ImageStaged, ListImages, NodeImages, StageImage
from .protocol_commands import (
    DEFAULT_MAX_LOG_SIZE,
    DEFAULT_MAX_RESULT,
    Ack,
    ArtifactsQuery,
    BlobData,
    DaemonMsg,
    Heartbeat,
    Kill,
    Owner,
    RecoverQuery,
    Start,
    Sync,
    Tail,
    Unfollow,
)
from .protocol_events import (
    ActiveJob,
    ArtifactFile,
    ArtifactsManifest,
    AttemptFenced,
    Busy,
    ExitReason,
    GpuInfo,
    GpuProcess,
    GpuSample,
    Hello,
    JobExited,
    JobLost,
    JobSignalled,
    JobStarted,
    JournaledEvent,
    LaunchFailed,
    LogData,
    NeedBlobs,
    Recovered,
    RunnerMsg,
    Sample,
    SetupPhase,
    StartRecord,
)
from .relay_wire import RelayDown, RelayUp

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")
# A message longer than one frame (the daemon's answer to `job ls --all` at a million
# jobs) goes as consecutive frames, each but the last with this bit set in its length
# word; a reader joins them. Readers that take requests keep the one-frame bound.
CONTINUED = 1 << 31
PART = 8 * 1024 * 1024


# ---------------------------------------------------------------- framing

_runner_decoder = msgspec.msgpack.Decoder(RunnerMsg)
_daemon_decoder = msgspec.msgpack.Decoder(DaemonMsg)
_encoder = msgspec.msgpack.Encoder()


class FrameError(Exception):
    """The byte stream is not a sequence of valid frames."""


def encode_frame(msg: RunnerMsg | DaemonMsg) -> bytes:
    payload = _encoder.encode(msg)
    return _HEADER.pack(len(payload)) + payload


def encode_payload(msg: RunnerMsg | DaemonMsg) -> bytes:
    """The payload alone, as the journal stores it."""
    return _encoder.encode(msg)


def decode_runner_payload(payload: bytes) -> RunnerMsg:
    try:
        return _runner_decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise FrameError(f"bad runner frame: {exc}") from exc


def decode_daemon_payload(payload: bytes) -> DaemonMsg:
    try:
        return _daemon_decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise FrameError(f"bad daemon frame: {exc}") from exc


def split_frames(payload: bytes, part: int = PART) -> bytes:
    """`payload` framed: one frame when it fits in `part`, else consecutive frames
    marked CONTINUED but the last."""
    if len(payload) <= part:
        return _HEADER.pack(len(payload)) + payload
    view = memoryview(payload)
    pieces: list[bytes | memoryview] = []
    for start in range(0, len(payload), part):
        piece = view[start : start + part]
        last = start + part >= len(payload)
        pieces += [_HEADER.pack(len(piece) | (0 if last else CONTINUED)), piece]
    return b"".join(pieces)


class FrameReader:
    """Incremental splitter: feed it bytes as they arrive, take whole payloads out.
    `max_message`: the most a message split over CONTINUED frames may add up to
    (None: no bound, for a client reading its own daemon's answer)."""

    def __init__(self, max_message: int | None = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._partial = bytearray()
        self._max = max_message

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= _HEADER.size:
            (word,) = _HEADER.unpack_from(self._buf)
            size = word & ~CONTINUED
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
            end = _HEADER.size + size
            if len(self._buf) < end:
                break
            piece = self._buf[_HEADER.size : end]
            if self._partial or word & CONTINUED:
                self._partial += piece
                if self._max is not None and len(self._partial) > self._max:
                    raise FrameError(
                        f"message of over {len(self._partial)} bytes is over the "
                        f"{self._max} limit"
                    )
                if not word & CONTINUED:
                    out.append(bytes(self._partial))
                    self._partial.clear()
            else:
                out.append(bytes(piece))
            del self._buf[:end]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)


__all__ = [
    "DEFAULT_MAX_LOG_SIZE",
    "DEFAULT_MAX_RESULT",
    "MAX_FRAME",
    "PROTOCOL_VERSION",
    "Ack",
    "ActiveJob",
    "ArtifactFile",
    "ArtifactsManifest",
    "ArtifactsQuery",
    "ArtifactsTreeQuery",
    "ArtifactsTreeReply",
    "AttemptFenced",
    "BlobData",
    "Busy",
    "CachedImage",
    "ChunkBytes",
    "DaemonMsg",
    "ExitReason",
    "FrameError",
    "FrameReader",
    "GpuInfo",
    "GpuProcess",
    "GpuSample",
    "Heartbeat",
    "Hello",
    "ImageStaged",
    "JobExited",
    "JobLost",
    "JobSignalled",
    "JobStarted",
    "JournaledEvent",
    "Kill",
    "LaunchFailed",
    "ListImages",
    "LogData",
    "NeedBlobs",
    "NodeImages",
    "Owner",
    "ReadChunks",
    "RecoverQuery",
    "Recovered",
    "RelayDown",
    "RelayUp",
    "RunnerMsg",
    "Sample",
    "SetupPhase",
    "StageImage",
    "Start",
    "StartRecord",
    "Sync",
    "SyncWanted",
    "Tail",
    "Unfollow",
    "decode_daemon_payload",
    "decode_runner_payload",
    "encode_frame",
    "encode_payload",
]
