"""The record of the order a job wrote its two streams in (`order-<attempt>.log`,
kept by `write_order`), and the pure decisions over it: which pieces a batch of the
kernel's modification events stands for, and which byte ranges a follower sends."""

from __future__ import annotations

import struct

RECORD = struct.Struct(">cQQ")  # stream, that stream's log size after the write, stamp ns
_STREAM = {b"o": "stdout", b"e": "stderr"}

Piece = tuple[str, int]  # (stream, that stream's end after it)


def split_batch(
    events: list[str], ends: dict[str, int], fresh: dict[str, bytes], limits: dict[str, int],
) -> list[Piece]:
    """The pieces one batch of modification events stands for, in the order written.
    `events`: the stream of each event, in queue order; `ends`: how far each stream
    was recorded before the batch; `fresh`: what each stream holds past that now;
    `limits`: each stream's size just before the batch was read (every write they
    hold has its event in this batch or before it). Each event is at least one write:
    it gets the next whole line (none when no line end is there yet); a stream's
    last event in the batch also gets the rest up to its limit."""
    last = {s: i for i, s in enumerate(events)}
    at = dict(ends)
    pieces: list[Piece] = []
    for i, stream in enumerate(events):
        base, body = ends.get(stream, 0), fresh.get(stream, b"")
        start = at.get(stream, 0)
        nl = body.find(b"\n", start - base)
        end = base + nl + 1 if nl >= 0 else start
        if last[stream] == i:
            end = max(end, min(base + len(body), limits.get(stream, 0)))
        if end > start:
            at[stream] = end
            if pieces and pieces[-1][0] == stream:
                pieces[-1] = (stream, end)
            else:
                pieces.append((stream, end))
    return pieces


def pieces_to_send(recorded: list[Piece], sent: dict[str, int]) -> list[tuple[str, int, int]]:
    """(stream, start, end) byte ranges to send, in the order written, given what was
    recorded and how far each stream has been sent."""
    at = dict(sent)
    out: list[tuple[str, int, int]] = []
    for stream, end in recorded:
        start = at.get(stream, 0)
        if end > start:
            out.append((stream, start, end))
            at[stream] = end
    return out


def parse_records(data: bytes) -> list[Piece]:
    """The whole records in `data`."""
    usable = len(data) - len(data) % RECORD.size
    return [(_STREAM.get(code, "stdout"), end)
            for code, end, _ in RECORD.iter_unpack(data[:usable])]
