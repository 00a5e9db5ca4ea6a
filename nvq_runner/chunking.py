"""Cutting files into content-defined chunks, so that a checkpoint rewritten in part, or
grown at the end, or shifted by an insertion, shares most of its chunks with the
version before it and a sync sends only the chunks that changed.

A chunk ends just after a fixed two-byte marker, found no earlier than `MIN_CHUNK`
bytes into the chunk, or at `MAX_CHUNK` when no marker comes. Where a boundary falls
depends only on the bytes around it, not on its offset in the file, so after an edit
the boundaries fall back into step with the old ones within a chunk or two. This is
the idea of a rolling-hash chunker (FastCDC, a gear hash) with the hash replaced by a
literal byte search: `bytes.find` runs in C, where a per-byte hash in Python would
chunk a 1 GiB checkpoint in minutes instead of about a second. On random data (what
model weights look like) a marker appears every 64 KiB, so chunks average about
`MIN_CHUNK + 64 KiB`; on data without the marker they are `MAX_CHUNK` long, i.e. the
fixed-size chunking this replaces. `bench/chunking.py` measures both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

MARKER = b"\x9d\x4b"
MIN_CHUNK = 256 * 1024
MAX_CHUNK = 4 * 1024 * 1024
READ_SIZE = 8 * 1024 * 1024


def next_cut(buf: bytes, start: int, final: bool) -> int:
    """The end of the chunk that begins at `start` in `buf`, or -1 when `buf` does not
    hold enough bytes to know yet (only when `final` is False)."""
    size = len(buf)
    limit = start + MAX_CHUNK
    found = buf.find(MARKER, start + MIN_CHUNK - len(MARKER), min(size, limit))
    if found >= 0:
        return found + len(MARKER)
    if size >= limit:
        return limit
    return size if final else -1


def cut_points(data: bytes) -> list[int]:
    """The end offsets of the chunks of `data` (the last one is `len(data)`)."""
    cuts: list[int] = []
    pos = 0
    while pos < len(data):
        pos = next_cut(data, pos, final=True)
        cuts.append(pos)
    return cuts


def chunks(handle: BinaryIO) -> Iterator[bytes]:
    """The chunks of a file, read in large blocks (memory stays below two blocks)."""
    buf = b""
    eof = False
    while True:
        if not eof and len(buf) < MAX_CHUNK:
            more = handle.read(READ_SIZE)
            if more:
                buf += more
                continue
            eof = True
        if not buf:
            return
        pos = 0
        while pos < len(buf):
            end = next_cut(buf, pos, final=eof)
            if end < 0:
                break
            yield buf[pos:end]
            pos = end
            if not eof and len(buf) - pos < MAX_CHUNK:
                break
        buf = buf[pos:]


def fixed_chunks(handle: BinaryIO, size: int = MAX_CHUNK) -> Iterator[bytes]:
    """Fixed-size chunks: only for the comparison in the benchmark and the tests."""
    while block := handle.read(size):
        yield block


def digest(chunk: bytes) -> str:
    return hashlib.sha256(chunk).hexdigest()
