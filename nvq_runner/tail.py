"""Answers to `Tail`: the last lines of a job's log, then (with follow) what is
appended until the attempt ends. Follow polls the file size; it is not on any
latency-critical path and costs nothing when nobody follows."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

from .protocol import LogData

CHUNK = 1024 * 1024
POLL = 0.2
Send = Callable[[LogData], Awaitable[None]]


def _open(path: Path) -> BinaryIO | None:
    try:
        return open(path, "rb")
    except OSError:
        return None


def start_of_last_lines(path: Path, lines: int) -> int:
    """Byte offset where the last `lines` lines of the file begin (0 for lines < 0)."""
    f = _open(path)
    if f is None:
        return 0
    with f:
        end = f.seek(0, os.SEEK_END)
        if lines < 0:
            return 0
        if lines == 0:
            return end
        pos, buf = end, b""
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            buf = f.read(step) + buf
            # A trailing newline ends the last line; it does not begin another.
            body = buf[:-1] if buf.endswith(b"\n") else buf
            if body.count(b"\n") >= lines:
                idx = len(body)
                for _ in range(lines):
                    idx = body.rfind(b"\n", 0, idx)
                return pos + idx + 1
        return 0


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
            data = f.read(min(CHUNK, size - offset))
            if not data:
                break
            offset += len(data)
            await send(LogData(req=req, data=data))
    return offset


async def tail(
    path: Path, req: int, lines: int, ended: asyncio.Future[None] | None, send: Send
) -> None:
    """Send the tail, follow while `ended` is pending, and always finish with eof."""
    try:
        offset = await send_from(path, start_of_last_lines(path, lines), req, send)
        while ended is not None:
            finished = ended.done()
            offset = await send_from(path, offset, req, send)
            if finished:
                break
            await asyncio.wait([ended], timeout=POLL)
    finally:
        await send(LogData(req=req, eof=True))
