"""The runner ⇄ daemon wire protocol: msgspec structs and their framing.

Every frame is a 4-byte big-endian length followed by a msgpack-encoded struct from
one of two tagged unions: `RunnerMsg` (runner → daemon) and `DaemonMsg`
(daemon → runner). This module is imported by both sides and depends on msgspec
alone, so a node needs nothing of the daemon to run the runner. The messages live in
`protocol_events` (runner → daemon) and `protocol_commands` (daemon → runner); this
module re-exports them all and holds the framing, so callers write `p.Hello`.

Durable runner events (`JobStarted`, `JobExited`, `JobLost`, `LaunchFailed`,
`AttemptFenced`) carry a
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

from .protocol_commands import (
    DEFAULT_MAX_LOG_SIZE as DEFAULT_MAX_LOG_SIZE,
)
from .protocol_commands import (
    DEFAULT_MAX_RESULT as DEFAULT_MAX_RESULT,
)
from .protocol_commands import (
    Ack as Ack,
)
from .protocol_commands import (
    ArtifactsQuery as ArtifactsQuery,
)
from .protocol_commands import (
    BlobData as BlobData,
)
from .protocol_commands import (
    DaemonMsg as DaemonMsg,
)
from .protocol_commands import (
    Heartbeat as Heartbeat,
)
from .protocol_commands import (
    Kill as Kill,
)
from .protocol_commands import (
    Owner as Owner,
)
from .protocol_commands import (
    Start as Start,
)
from .protocol_commands import (
    Sync as Sync,
)
from .protocol_commands import (
    Tail as Tail,
)
from .protocol_commands import (
    Unfollow as Unfollow,
)
from .protocol_events import (
    ActiveJob as ActiveJob,
)
from .protocol_events import (
    ArtifactFile as ArtifactFile,
)
from .protocol_events import (
    ArtifactsManifest as ArtifactsManifest,
)
from .protocol_events import (
    AttemptFenced as AttemptFenced,
)
from .protocol_events import (
    Busy as Busy,
)
from .protocol_events import (
    ExitReason as ExitReason,
)
from .protocol_events import (
    GpuInfo as GpuInfo,
)
from .protocol_events import (
    GpuProcess as GpuProcess,
)
from .protocol_events import (
    GpuSample as GpuSample,
)
from .protocol_events import (
    Hello as Hello,
)
from .protocol_events import (
    JobExited as JobExited,
)
from .protocol_events import (
    JobLost as JobLost,
)
from .protocol_events import (
    JobStarted as JobStarted,
)
from .protocol_events import (
    JournaledEvent as JournaledEvent,
)
from .protocol_events import (
    LaunchFailed as LaunchFailed,
)
from .protocol_events import (
    LogData as LogData,
)
from .protocol_events import (
    NeedBlobs as NeedBlobs,
)
from .protocol_events import (
    RunnerMsg as RunnerMsg,
)
from .protocol_events import (
    Sample as Sample,
)

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


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


class FrameReader:
    """Incremental splitter: feed it bytes as they arrive, take whole payloads out."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf)
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
            end = _HEADER.size + size
            if len(self._buf) < end:
                break
            out.append(bytes(self._buf[_HEADER.size : end]))
            del self._buf[:end]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)
