"""Answers to `Tail`: the last lines of a job's log, then (with follow) what is
appended until the attempt ends. Follow polls the file size; it is not on any
latency-critical path and costs nothing when nobody follows."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

from .jobfiles import size_text
from .protocol import LogData

CHUNK = 1024 * 1024
STEP = 65536  # bytes read per step backwards
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
POLL = 0.2
Send = Callable[[LogData], Awaitable[None]]


def _open(path: Path) -> BinaryIO | None:
    try:
        return open(path, "rb")
    except OSError:
        return None


def start_of_last_lines(path: Path, lines: int) -> int:
    """Byte offset where the last `lines` lines of the file begin (0 for lines < 0)."""
    return tail_start(path, lines, 0)[0]


def tail_start(path: Path, lines: int, max_bytes: int) -> tuple[int, bool]:
    """Where the last `lines` lines of the file begin (all of it for lines < 0), and
    whether that was cut to the last `max_bytes` (> 0) bytes. Reads backwards from
    the end: time grows with the bytes returned, not with the file."""
    f = _open(path)
    if f is None:
        return 0, False
    with f:
        end = f.seek(0, os.SEEK_END)
        floor = max(0, end - max_bytes) if max_bytes > 0 else 0
        if lines < 0:
            return floor, floor > 0
        if lines == 0:
            return end, False
        # A trailing newline ends the last line; it does not begin another.
        f.seek(max(0, end - 1))
        pos = end - 1 if end and f.read(1) == b"\n" else end
        wanted = lines  # newlines still to find, scanning back from `pos`
        while pos > floor:
            step = min(STEP, pos - floor)
            f.seek(pos - step)
            chunk = f.read(step)
            found = chunk.count(b"\n")
            if found >= wanted:
                idx = len(chunk)
                for _ in range(wanted):
                    idx = chunk.rfind(b"\n", 0, idx)
                return pos - step + idx + 1, False
            wanted -= found
            pos -= step
        return floor, floor > 0


async def send_from(path: Path, offset: int, req: int, send: Send) -> int:
    """Send what the file holds past `offset`; returns the new offset. A file shorter
    than `offset` was truncated (a new attempt began): start over from its beginning."""
    f = _open(path)
    if f is None:
        return offset
    with f:
        size = f.seek(0, os.SEEK_END)
        if size < offset:
            offset = 0
        f.seek(offset)
        while offset < size:
            data = await asyncio.to_thread(f.read, min(CHUNK, size - offset))
            if not data:
                break
            offset += len(data)
            await send(LogData(req=req, data=data))
    return offset


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def cut_marker(max_bytes: int) -> bytes:
    return f"[nvq: output cut to the last {size_text(max_bytes)}]\n".encode()


async def tail(
    path: Path, req: int, lines: int, ended: asyncio.Future[None] | None, send: Send,
    max_bytes: int = DEFAULT_MAX_BYTES, offset: int | None = None,
) -> None:
    """Send the tail, follow while `ended` is pending, and always finish with eof.
    A tail that would hold more than `max_bytes` starts with `cut_marker` instead."""
    try:
        if offset is not None:
            start, cut = min(offset, _size(path)), False
        else:
            start, cut = await asyncio.to_thread(tail_start, path, lines, max_bytes)
        if cut:
            await send(LogData(req=req, data=cut_marker(max_bytes)))
        offset = await send_from(path, start, req, send)
        while ended is not None:
            finished = ended.done()
            offset = await send_from(path, offset, req, send)
            if finished:
                break
            await asyncio.wait([ended], timeout=POLL)
    finally:
        await send(LogData(req=req, eof=True))
