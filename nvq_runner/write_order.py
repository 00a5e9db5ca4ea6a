"""The order in which a job wrote its two streams, kept beside its logs.

A job writes `stdout.log` and `stderr.log` itself (its descriptors are the files: it
outlives the runner, and the files stay readable as they are), so the files alone
cannot say whether `out 2` came before `err 2`. The kernel can: one inotify queue
holds every write's modification event in the order the writes happened, whatever
reads it late. One thread (`OrderWatch`), on no path a sync or a sample can block,
reads that queue and appends a record per event to `order-<attempt>.log` in the job
directory: the stream, where that stream's log ended then, and when (ns since the
epoch). `merged_tail` sends both logs piece by piece in that order.

Reading the queue late loses nothing of the order, only which bytes each write
added: the logs' sizes are taken before each read of the queue (every write they
hold has its event in that read or before), each event stands for at least its
stream's next line, and a stream's last event in a read for the rest up to that
size; so output written a line per write comes out exact. Writes while no runner
watched (after a runner restart) are ordered no finer than the next event of each
stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import logging
import os
import select
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Optional

from .logcap import cut_records
from .protocol import DEFAULT_MAX_LOG_SIZE, LogData

log = logging.getLogger(__name__)

STREAMS = ("stdout", "stderr")
_NAMES = {"stdout.log": "stdout", "stderr.log": "stderr"}
_LOG_NAMES = {name.encode() for name in _NAMES}
_CODE = {"stdout": b"o", "stderr": b"e"}
_STREAM = {b"o": "stdout", b"e": "stderr"}
RECORD = struct.Struct(">cQQ")  # stream, that stream's log size after the write, stamp ns
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length

IN_MODIFY = 0x00000002
IN_IGNORED = 0x00008000
IN_CLOEXEC = 0o2000000

QUIET = 0.05  # no event for this long: what the logs hold past their records is recorded
GATHER = 0.005  # after an event, how long its neighbours are let in before the read
POLL = 0.2  # how often a follower looks for new records
DRAIN_WAIT = 5.0  # how long a follower of an ended attempt waits for its last records
CHUNK = 1024 * 1024
INLINE_READ = 64 * 1024  # a read this short is done on the loop, not in a thread
LINE_PAST = 64 * 1024  # how far past a stream's limit its next line is looked for

Send = Callable[[LogData], Awaitable[None]]
Piece = tuple[str, int]  # (stream, that stream's end after it)


def order_path(job_dir: Path, attempt: int) -> Path:
    return job_dir / f"order-{attempt}.log"


# ---------------------------------------------------------------- pure decisions


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


# ---------------------------------------------------------------- the watching thread


class _Watch:
    def __init__(self, path: Path, attempt: int, adopted: bool, cap: int) -> None:
        self.path = path
        self.attempt = attempt
        self.cap = cap
        self.ends: dict[str, int] = {s: 0 for s in STREAMS}
        order = order_path(path, attempt)
        if adopted:  # what the runner before this one recorded stays, and goes on
            with contextlib.suppress(OSError):
                self.ends.update(dict(parse_records(order.read_bytes())))
        self.drained = threading.Event()
        # Streams by their last event in the latest batch: leftovers go in that order.
        self.last: list[str] = list(STREAMS)
        # Made at the first record: a job that writes nothing (many do) costs no file,
        # and on an ext4 without a journal each new inode is searched for past the
        # ones freed lately. A launch starts the attempt's record over.
        self._order = order
        self.fd = -1
        if not adopted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(order)

    def write(self, data: bytes) -> None:
        if self.fd < 0:
            self.fd = os.open(self._order, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                              0o600)
        os.write(self.fd, data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _events(data: bytes) -> list[tuple[int, int, bytes]]:
    """(wd, mask, name) of each event in one read of the queue."""
    out: list[tuple[int, int, bytes]] = []
    pos = 0
    while pos + _EVENT.size <= len(data):
        wd, mask, _, size = _EVENT.unpack_from(data, pos)
        name = data[pos + _EVENT.size : pos + _EVENT.size + size].split(b"\0", 1)[0]
        pos += _EVENT.size + size
        out.append((wd, mask, name))
    return out


def _writes_a_log(data: bytes) -> bool:
    """Whether a read of the queue holds a log's write or a watch's end (IN_IGNORED:
    its attempt's last records are due)."""
    return any(mask & IN_IGNORED or name in _LOG_NAMES for _, mask, name in _events(data))


def _read_more(fd: int) -> bytes:
    """What the queue holds now (one read, as much as the first), without waiting."""
    return os.read(fd, 256 * 1024) if select.select([fd], [], [], 0)[0] else b""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path, start: int, end: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(max(0, end - start))
    except OSError:
        return b""


class OrderWatch:
    """One inotify queue for every watched attempt's directory, read by one thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: dict[int, _Watch] = {}  # wd → watch
        self._by_dir: dict[Path, int] = {}
        self._libc: Optional[ctypes.CDLL] = None
        self._fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_CLOEXEC)
        except (OSError, AttributeError):
            fd = -1
        if fd < 0:
            log.warning("no inotify: both streams of a job are merged as they are read")
            return
        self._libc, self._fd = libc, fd
        threading.Thread(target=self._run, name="write-order", daemon=True).start()

    def watch(
        self, job_dir: Path, attempt: int, adopted: bool = False, cap: int = DEFAULT_MAX_LOG_SIZE,
    ) -> None:
        """Record the order of writes to `job_dir`'s logs from now on, for `attempt`
        (`adopted`: after the records a runner before this one kept), the records held
        under `cap` bytes (the job's max_log_size)."""
        if self._libc is None:
            return
        with self._lock:
            try:
                w = _Watch(job_dir, attempt, adopted, cap)
            except Exception as exc:  # a job's order is worth less than its adoption
                log.warning("cannot keep the write order of %s: %s", job_dir, exc)
                return
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(job_dir), IN_MODIFY)
            if wd < 0:
                w.close()
                log.warning("cannot watch %s: %s", job_dir, os.strerror(ctypes.get_errno()))
                return
            old = self._watches.get(wd)
            if old is not None:  # the same directory again: a new attempt replaces it
                self._close(old)
            self._watches[wd] = w
            self._by_dir[job_dir] = wd
            # What is there already (an adopted attempt) comes before what follows; a
            # launch's logs are made after this, by the spawn.
            try:
                if adopted:
                    self._record(w, list(STREAMS), None)
            except OSError as exc:
                log.warning("cannot record the write order of %s: %s", job_dir, exc)

    def unwatch(self, job_dir: Path) -> None:
        """The attempt ended: its last events are recorded, then `drained` is set."""
        with self._lock:
            wd = self._by_dir.pop(job_dir, None)
            if wd is not None and self._libc is not None:
                self._libc.inotify_rm_watch(self._fd, wd)

    def drained(self, job_dir: Path, attempt: int) -> Optional[threading.Event]:
        """Set once every write of this attempt has its record; None when its order is
        not being kept (no watch: merge as read)."""
        with self._lock:
            for w in self._watches.values():
                if w.path == job_dir and w.attempt == attempt:
                    return w.drained
        return None

    def _close(self, w: _Watch) -> None:
        if not w.drained.is_set():
            try:
                w.close()
            except OSError:
                pass
            w.drained.set()

    def _sizes(self) -> dict[int, dict[str, int]]:
        return {wd: {s: _size(w.path / f"{s}.log") for s in STREAMS}
                for wd, w in self._watches.items()}

    def _run(self) -> None:
        quiet = False
        while True:
            try:
                ready, _, _ = select.select([self._fd], [], [], None if quiet else QUIET)
                if not ready:
                    # Sizes before looking again: every write they hold has its event
                    # queued by then; a write after them waits for its own.
                    with self._lock:
                        limits = self._sizes()
                    if select.select([self._fd], [], [], 0)[0]:
                        continue  # a write came meanwhile: read it first
                    # Nothing queued: every write the sizes hold has been read, and what
                    # the logs hold past their records goes in the order last seen.
                    with self._lock:
                        for wd, w in self._watches.items():
                            self._record(w, w.last, limits.get(wd))
                    quiet = True
                    continue
                # A busy node's jobs raise events by the thousand a second: taken a
                # few ms late they come in one read, not one wake-up (and one turn
                # of the interpreter's lock) each. Late loses nothing of the order.
                time.sleep(GATHER)
                data = os.read(self._fd, 256 * 1024)
                # Most events are the runner's own files in the job directories
                # (records, status, this very order file): a batch without a log's
                # write needs neither sizes nor a quiet sweep after it.
                if not _writes_a_log(data):
                    continue
                # Sizes, then the queue read again: every write they hold has its
                # event in the two reads (or before); a write after them waits for
                # its own. (Sizes at every wake-up, stat'ing both logs of every
                # watched attempt, were most of a busy runner's system calls.)
                with self._lock:
                    limits = self._sizes()
                data += _read_more(self._fd)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                log.error("the write-order queue failed: %s", exc)
                return
            quiet = False
            try:
                self._batch(data, limits)
            except Exception:
                log.exception("recording the write order failed")

    def _batch(self, data: bytes, limits: dict[int, dict[str, int]]) -> None:
        per_wd: dict[int, list[str]] = {}
        ended: list[int] = []
        for wd, mask, name in _events(data):
            if mask & IN_IGNORED:
                ended.append(wd)
            elif mask & IN_MODIFY:
                stream = _NAMES.get(name.decode(errors="replace"))
                if stream is not None:
                    per_wd.setdefault(wd, []).append(stream)
        with self._lock:
            for wd, events in per_wd.items():
                w = self._watches.get(wd)
                if w is not None:
                    self._record(w, events, limits.get(wd))
                    w.last = sorted(set(events), key=lambda s: max(
                        i for i, e in enumerate(events) if e == s))
            for wd in ended:
                w = self._watches.pop(wd, None)
                if w is not None:
                    self._record(w, w.last, None)  # writes no event was left for
                    self._close(w)

    def _record(self, w: _Watch, events: list[str], limits: Optional[dict[str, int]]) -> None:
        """Record the pieces `events` stand for, each stream up to its size in `limits`
        (None: its size now)."""
        if w.drained.is_set() or not events:
            return
        sizes = {s: _size(w.path / f"{s}.log") for s in set(events)}
        limits = {s: min(size, (limits or sizes).get(s, size)) for s, size in sizes.items()}
        for s, size in sizes.items():
            if size < w.ends[s]:
                w.ends[s] = size  # the log was cut (logcap) or started over
        # What past its limit a stream's next line needs, no more.
        fresh = {s: _read(w.path / f"{s}.log", w.ends[s], min(sizes[s], max(
            limits[s], w.ends[s]) + LINE_PAST)) for s in sizes}
        pieces = split_batch(events, w.ends, fresh, limits)
        if not pieces:
            return
        stamp = time.time_ns()
        w.write(b"".join(RECORD.pack(_CODE[s], end, stamp) for s, end in pieces))
        for s, end in pieces:
            w.ends[s] = end
        if os.fstat(w.fd).st_size > w.cap:  # appends go on at the cut file's end (O_APPEND)
            cut_records(order_path(w.path, w.attempt), w.cap, RECORD.size)


# ---------------------------------------------------------------- following both logs


def _records_from(path: Path, pos: int) -> tuple[list[Piece], int]:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < pos:  # its middle was cut (cut_records): go on from its end
                pos = size - size % RECORD.size
            f.seek(pos)
            data = f.read()
    except OSError:
        return [], pos
    recs = parse_records(data)
    return recs, pos + len(recs) * RECORD.size


async def _read_off_loop(path: Path, start: int, end: int) -> bytes:
    """`_read`, in a thread when it is long: a thread's hand-over costs more than a
    short read of a local file (most jobs' logs, and every follow's first look)."""
    if end - start <= INLINE_READ:
        return _read(path, start, end)
    return await asyncio.to_thread(_read, path, start, end)


async def _records_off_loop(path: Path, pos: int) -> tuple[list[Piece], int]:
    """`_records_from`, in a thread when many records came since `pos`."""
    if _size(path) - pos <= INLINE_READ:
        return _records_from(path, pos)
    return await asyncio.to_thread(_records_from, path, pos)


async def merged_tail(
    logs: dict[str, Path], order: Path, req: int, offsets: dict[str, int],
    ended: Optional[asyncio.Future[None]], drained: Optional[threading.Event], send: Send,
) -> None:
    """Send both logs from `offsets` on, as `LogData` naming their stream, in the order
    written (as far as `order` records it), following while `ended` is pending; always
    finishes with eof. Without `drained` (no order kept) each stream is sent as it is
    read, stdout first."""
    sent = dict(offsets)
    pos = 0

    async def piece(stream: str, start: int, end: int) -> None:
        size = _size(logs[stream])
        if size < start:  # the log was cut meanwhile: carry on from its end
            sent[stream] = size
            return
        end = min(end, size)
        while start < end:
            data = await _read_off_loop(logs[stream], start, min(end, start + CHUNK))
            if not data:
                break
            start += len(data)
            sent[stream] = start
            await send(LogData(req=req, data=data, stream=stream))  # type: ignore[arg-type]

    try:
        while True:
            finished = ended is None or ended.done()
            if finished and drained is not None and not drained.is_set():
                await asyncio.to_thread(drained.wait, DRAIN_WAIT)
            recs, pos = await _records_off_loop(order, pos)
            for stream, start, end in pieces_to_send(recs, sent):
                await piece(stream, start, end)
            if finished or drained is None:
                for stream in STREAMS:
                    await piece(stream, sent.get(stream, 0), _size(logs[stream]))
            if finished:
                break
            assert ended is not None
            await asyncio.wait([ended], timeout=POLL)
    finally:
        await send(LogData(req=req, eof=True))
