"""Cutting files into content-defined chunks, so that a checkpoint rewritten in part, or
grown at the end, or shifted by an insertion, shares most of its chunks with the
version before it and a sync sends only the chunks that changed.

A chunk ends just after a marker: a fixed two-byte pattern whose next byte has its low
bit clear, found no earlier than `MIN_CHUNK` bytes into the chunk, or at
`MAX_CHUNK` when no marker comes. Where a boundary falls depends only on the bytes
around it, not on its offset in the file, so after an edit the boundaries fall back
into step with the old ones. This is the idea of a rolling-hash chunker (FastCDC, a
gear hash) with the hash replaced by a literal byte search: `bytes.find` runs in C,
where a per-byte hash in Python would chunk a 1 GiB checkpoint in minutes instead of
about a second. On random data (what model weights look like) a marker appears every
128 KiB, so chunks average about `MIN_CHUNK + 128 KiB` (256 KiB); on data without the
pattern they are `MAX_CHUNK` long, i.e. fixed-size chunking.

Why the minimum is no larger than the marker spacing: after an edit the old and the new
boundaries are two chains, each link "the first marker past the last boundary plus
MIN_CHUNK", and they fall back into step only when no marker lies between their two
skip ends. With the minimum four times the spacing (the first version: 256 KiB past a
marker every 64 KiB) that took up to a dozen chunks, so one rewrite of 1 % of a 20 MiB
checkpoint sent over 2 MiB about one time in fifteen; with the minimum equal to the
spacing, the chains meet within a chunk or two (at most 1.5 MiB sent in 300 such
rewrites), and the search still skips half the bytes. `bench/chunking.py` measures it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

MARKER = b"\x9d\x4b"
# The marker counts only where the byte after the pattern has these bits clear
# (one in two), which spaces markers 128 KiB apart on random data.
MARKER_BITS = 0x01
MARKER_LEN = len(MARKER) + 1
MIN_CHUNK = 128 * 1024
MAX_CHUNK = 4 * 1024 * 1024
READ_SIZE = 8 * 1024 * 1024


def next_cut(buf: bytes, start: int, final: bool) -> int:
    """The end of the chunk that begins at `start` in `buf`, or -1 when `buf` does not
    hold enough bytes to know yet (only when `final` is False)."""
    size = len(buf)
    limit = start + MAX_CHUNK
    end = min(size, limit)
    found = buf.find(MARKER, start + MIN_CHUNK - MARKER_LEN, end - 1)
    while found >= 0 and buf[found + len(MARKER)] & MARKER_BITS:
        found = buf.find(MARKER, found + 1, end - 1)
    if found >= 0:
        return found + MARKER_LEN
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
