"""The runner's side of framing: every frame it sends fits the frame limit.

The daemon drops a link that carries a frame over `MAX_FRAME`, and the runner would
replay the same journaled event on every reconnect, forever. So sizes are settled at
the source: a log chunk is split, an oversized event is shrunk to what it must say,
and anything else that cannot fit is replaced by a small error or dropped.
"""

from __future__ import annotations

import logging

import msgspec

from .protocol import (
    MAX_FRAME,
    ArtifactsManifest,
    AttemptFenced,
    JobExited,
    JobLost,
    JobSignalled,
    JournaledEvent,
    LaunchFailed,
    LogData,
    RunnerMsg,
    Sample,
    SetupPhase,
    encode_frame,
    encode_payload,
)

log = logging.getLogger(__name__)

LOG_PIECE = 4 * 1024 * 1024  # data bytes per LogData frame once split
TEXT_CAP = 64 * 1024  # stderr tails, error texts and reasons
STATUS_CAP = 4096  # one status (progress) line


def cut_text(text: str, cap: int, keep_end: bool = True) -> str:
    """`text` in at most `cap` bytes of UTF-8, keeping its end (or its start)."""
    data = text.encode()
    if len(data) <= cap:
        return text
    piece = data[-cap:] if keep_end else data[:cap]
    return piece.decode(errors="ignore")


def shrink(msg: RunnerMsg) -> RunnerMsg | None:
    """A version of `msg` small enough to send, or None when there is none."""
    if isinstance(msg, JobExited):
        return msgspec.structs.replace(
            msg,
            progress=None if msg.progress is None else cut_text(msg.progress, STATUS_CAP),
            stderr_tail=cut_text(msg.stderr_tail, TEXT_CAP),
            result=None,
            result_error=(
                "result.json is too large to send"
                if msg.result is not None and msg.result_error is None
                else msg.result_error and cut_text(msg.result_error, TEXT_CAP, False)
            ),
        )
    if isinstance(msg, LaunchFailed):
        return msgspec.structs.replace(msg, error=cut_text(msg.error, TEXT_CAP, False))
    if isinstance(msg, JobLost):
        return msgspec.structs.replace(msg, reason=cut_text(msg.reason, TEXT_CAP, False))
    if isinstance(msg, ArtifactsManifest):
        return ArtifactsManifest(
            req=msg.req, job_id=msg.job_id, root=msg.root,
            error=f"too many artifacts to list ({len(msg.files)} files)",
        )
    if isinstance(msg, Sample):
        return msgspec.structs.replace(
            msg, progress={j: cut_text(t, STATUS_CAP) for j, t in msg.progress.items()}
        )
    return None


def encode_frames(msg: RunnerMsg, limit: int = MAX_FRAME) -> bytes:
    """The frames that carry `msg`, each within `limit` bytes of payload."""
    frame = encode_frame(msg)
    if len(frame) - 4 <= limit:
        return frame
    if isinstance(msg, LogData):
        piece = max(1, min(LOG_PIECE, limit // 2))
        parts = [msg.data[i : i + piece] for i in range(0, len(msg.data), piece)] or [b""]
        frames = [encode_frame(LogData(req=msg.req, data=p, stream=msg.stream))
                  for p in parts[:-1]]
        frames.append(encode_frame(LogData(req=msg.req, data=parts[-1], eof=msg.eof,
                                           error=msg.error, stream=msg.stream)))
        return b"".join(frames)
    small = shrink(msg)
    if small is not None:
        shrunk = encode_frame(small)
        if len(shrunk) - 4 <= limit:
            log.warning("%s frame of %d bytes shrunk to fit the frame limit",
                        type(msg).__name__, len(frame))
            return shrunk
    log.error("dropping a %s frame over the %d-byte frame limit", type(msg).__name__, limit)
    return b""


def fit_event(event: JournaledEvent, limit: int = MAX_FRAME) -> JournaledEvent:
    """`event` as it may be journaled: replayed as often as it takes, it must fit."""
    if len(encode_payload(event)) <= limit:
        return event
    small = shrink(event)
    assert isinstance(small, (JobExited, JobLost, LaunchFailed, AttemptFenced, JobSignalled,
                              SetupPhase))
    return small
