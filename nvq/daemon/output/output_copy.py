"""The queue host's copy of one attempt's output, kept so `job logs` (and the TUI and
the web page, which ask the same way) work while the node is down or gone.

``$NVQ_HOME/logs/<job>/<attempt>.out`` holds both streams as records in the order
they reached the queue host: one byte naming the stream (``o`` stdout, ``e`` stderr,
``m`` a note of nvq's own), four bytes of length, the bytes. Beside it
``<attempt>.json`` says how far each stream of the node's log has been copied and
whether it is complete. Past `cap` bytes the middle is cut out: the head (how the
job began) and the newest output stay, as on the node.

Both streams' order is the order the job wrote them: the node's runner sends both in
one answer, piece by piece in that order (`nvq_runner.write_order`)."""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from nvq_runner.jobfiles import size_text
from nvq_runner.tail import cut_marker

Stream = Literal["stdout", "stderr"]
Shown = Literal["stdout", "stderr", "both"]
_CODE = {"stdout": b"o", "stderr": b"e"}
_NAME = {b"o": "stdout", b"e": "stderr", b"m": "note"}
_HEAD = struct.Struct(">cI")
_MARK = {"stdout": "out| ", "stderr": "err| ", "note": "nvq| "}


class CopyState(msgspec.Struct):
    node: str
    offsets: dict[str, int] = msgspec.field(default_factory=dict)
    done: dict[str, bool] = msgspec.field(default_factory=dict)
    generation: int = 0  # bumped at each cut, so a follower knows its place moved

    @property
    def complete(self) -> bool:
        return all(self.done.get(s, False) for s in _CODE)


def copy_paths(home: Path, job_id: int, attempt: int) -> tuple[Path, Path]:
    d = home / "logs" / str(job_id)
    return d / f"{attempt}.out", d / f"{attempt}.json"


def read_state(path: Path) -> CopyState | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=CopyState)
    except (OSError, msgspec.DecodeError):
        return None


# A state file's size once written: one sector, padded with spaces (JSON ignores them).
STATE_SIZE = 512


def write_state(path: Path, state: CopyState) -> None:
    """The first write makes the file (write and rename); later ones overwrite it in
    place, padded to one 512-byte sector, as the runner does its attempt record
    (`nvq_runner.jobfiles.JobDir.write_record`). Each attempt's state is written at
    least twice (each stream's end), and a replace by rename made a new inode and
    freed one every time: on this queue host's ext4 without a journal, every new
    inode is searched for past the recently freed ones, so that churn was a real part
    of the CPU a job cost the machine. One pwrite of a single sector is whole after a
    crash of the daemon; only the daemon reads the file, on its own loop, so no reader
    sees it half written. A longer state falls back to the rename."""
    data = msgspec.json.encode(state)
    if len(data) <= STATE_SIZE:
        data = data.ljust(STATE_SIZE)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            try:
                if os.fstat(fd).st_size == STATE_SIZE:
                    if os.pwrite(fd, data, 0) != STATE_SIZE:
                        raise OSError(errno.ENOSPC, "short write of an output copy's state")
                    return
            finally:
                os.close(fd)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.replace(path)


def append(path: Path, stream: str, data: bytes) -> int:
    """Add one record; returns the copy's size after it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, _HEAD.pack(_CODE.get(stream, b"m"), len(data)) + data)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def records(data: bytes) -> Iterator[tuple[str, bytes]]:
    """(stream, bytes) of each whole record in `data`; a torn last one is skipped."""
    pos = 0
    while pos + _HEAD.size <= len(data):
        code, size = _HEAD.unpack_from(data, pos)
        start = pos + _HEAD.size
        if start + size > len(data):
            return
        yield _NAME.get(code, "note"), data[start : start + size]
        pos = start + size


def whole_records_end(data: bytes) -> int:
    """Where the last whole record in `data` ends."""
    pos = 0
    while pos + _HEAD.size <= len(data):
        _, size = _HEAD.unpack_from(data, pos)
        if pos + _HEAD.size + size > len(data):
            break
        pos += _HEAD.size + size
    return pos


def cut_middle(path: Path, cap: int) -> bool:
    """Keep the first quarter and the newest half of `cap` when the copy passed it."""
    try:
        if path.stat().st_size <= cap:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    head_budget, tail_budget = cap // 4, cap // 2
    head: list[bytes] = []
    used = 0
    recs = list(records(data))
    i = 0
    while i < len(recs) and used + len(recs[i][1]) <= head_budget:
        head.append(_HEAD.pack(_CODE.get(recs[i][0], b"m"), len(recs[i][1])) + recs[i][1])
        used += len(recs[i][1])
        i += 1
    tail: list[bytes] = []
    used = 0
    j = len(recs)
    while j > i and used < tail_budget:
        j -= 1
        stream, body = recs[j]
        body = body[-(tail_budget - used):]
        tail.append(_HEAD.pack(_CODE.get(stream, b"m"), len(body)) + body)
        used += len(body)
    note = f"\n[nvq: output cut here to keep the copy under {size_text(cap)}]\n".encode()
    out = b"".join([*head, _HEAD.pack(b"m", len(note)) + note, *reversed(tail)])
    tmp = path.with_suffix(".cut")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(out)
    tmp.replace(path)
    return True


class Renderer:
    """Records → the bytes `job logs` prints, for one stream or both; with `marks`,
    each line starts with the stream it came from (`out| `, `err| `). Keeps where the
    last line ended, so a follower renders piece after piece the same way."""

    def __init__(self, shown: Shown, marks: bool) -> None:
        self.shown = shown
        self.marks = marks
        self._at_line_start = True
        self._last: str | None = None

    def render(self, recs: list[tuple[str, bytes]]) -> bytes:
        out: list[bytes] = []
        for stream, body in recs:
            if not body or (self.shown != "both" and stream not in (self.shown, "note")):
                continue
            if not self.marks:
                out.append(body)
                continue
            if not self._at_line_start and stream != self._last:
                out.append(b"\n")
                self._at_line_start = True
            mark = _MARK[stream].encode()
            for line in body.splitlines(keepends=True):
                out.append(mark + line if self._at_line_start else line)
                self._at_line_start = line.endswith(b"\n")
            self._last = stream
        return b"".join(out)


def last_lines(text: bytes, lines: int, max_bytes: int) -> bytes:
    """The last `lines` lines (all for lines < 0), at most `max_bytes` (0: no cap)."""
    if lines >= 0:
        body = text[:-1] if text.endswith(b"\n") else text
        cut = len(body)
        for _ in range(lines):
            cut = body.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        text = text if cut < 0 else text[cut + 1 :] if lines else b""
    if max_bytes > 0 and len(text) > max_bytes:
        text = cut_marker(max_bytes) + text[-max_bytes:]
    return text
