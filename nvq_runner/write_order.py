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
import errno
import logging
import os
import select
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Optional

from .inotify import IN_IGNORED, IN_MODIFY, Inotify
from .inotify import events as queue_events
from .logcap import cut_records
from .order_records import RECORD, Piece, parse_records, pieces_to_send, split_batch
from .protocol import DEFAULT_MAX_LOG_SIZE, LogData

log = logging.getLogger(__name__)

STREAMS = ("stdout", "stderr")
_NAMES = {"stdout.log": "stdout", "stderr.log": "stderr"}
_LOG_NAMES = {name.encode() for name in _NAMES}
_CODE = {"stdout": b"o", "stderr": b"e"}

QUIET = 0.05  # no event for this long: what the logs hold past their records is recorded
POLL = 0.2  # how often a follower looks for new records
DRAIN_WAIT = 5.0  # how long a follower of an ended attempt waits for its last records
CHUNK = 1024 * 1024
INLINE_READ = 64 * 1024  # a read this short is done on the loop, not in a thread
LINE_PAST = 64 * 1024  # how far past a stream's limit its next line is looked for

Send = Callable[[LogData], Awaitable[None]]


def order_path(job_dir: Path, attempt: int) -> Path:
    return job_dir / f"order-{attempt}.log"


# ---------------------------------------------------------------- the watching thread


class _Watch:
    def __init__(self, path: Path, attempt: int, adopted: bool, cap: int) -> None:
        self.path = path
        # the logs' paths as strings: their sizes are taken before every read
        self.logs = {s: os.path.join(path, f"{s}.log") for s in STREAMS}
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
        # Made at the first record: a job that writes nothing costs no inode (on ext4
        # without a journal each is searched for past those freed lately).
        self._order, self.fd = order, -1
        if not adopted:  # a launch starts the attempt's record over
            with contextlib.suppress(FileNotFoundError):
                os.unlink(order)

    def write(self, data: bytes) -> None:
        if self.fd < 0:
            self.fd = os.open(self._order, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.write(self.fd, data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _writes_a_log(data: bytes) -> bool:
    """Whether a read of the queue holds a log's write or a watch's end (IN_IGNORED)."""
    return any(mask & IN_IGNORED or name in _LOG_NAMES for _, mask, name in queue_events(data))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _stat_size(path: str) -> int:
    try:
        return os.stat(path).st_size
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
        self._queue: Optional[Inotify] = None
        try:
            self._queue = Inotify()
        except OSError:
            log.warning("no inotify: both streams of a job are merged as they are read")
            return
        threading.Thread(target=self._run, args=(self._queue,), name="write-order",
                         daemon=True).start()

    def watch(
        self, job_dir: Path, attempt: int, adopted: bool = False, cap: int = DEFAULT_MAX_LOG_SIZE,
    ) -> None:
        """Record the order of writes to `job_dir`'s logs from now on, for `attempt`
        (`adopted`: after the records a runner before this one kept), the records held
        under `cap` bytes (the job's max_log_size)."""
        if self._queue is None:
            return
        with self._lock:
            try:
                w = _Watch(job_dir, attempt, adopted, cap)
            except Exception as exc:  # a job's order is worth less than its adoption
                log.warning("cannot keep the write order of %s: %s", job_dir, exc)
                return
            try:
                wd = self._queue.add_watch(job_dir, IN_MODIFY)
            except OSError as exc:
                w.close()
                log.warning("cannot watch %s: %s", job_dir, exc)
                return
            old = self._watches.get(wd)
            if old is not None:  # the same directory again: a new attempt replaces it
                self._close(old)
            self._watches[wd] = w
            self._by_dir[job_dir] = wd
            # What an adopted attempt wrote comes first (a launch's logs are made later).
            try:
                if adopted:
                    self._record(w, list(STREAMS), None)
            except OSError as exc:
                log.warning("cannot record the write order of %s: %s", job_dir, exc)

    def unwatch(self, job_dir: Path) -> None:
        """The attempt ended: its last events are recorded, then `drained` is set."""
        with self._lock:
            wd = self._by_dir.pop(job_dir, None)
            if wd is not None and self._queue is not None:
                self._queue.rm_watch(wd)

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
        return {wd: {s: _stat_size(log) for s, log in w.logs.items()}
                for wd, w in self._watches.items()}

    def _run(self, queue: Inotify) -> None:
        quiet = False
        while True:
            try:
                ready, _, _ = select.select([queue.fd], [], [], None if quiet else QUIET)
                # Sizes before the read: every write they hold has its event in what
                # the read returns (or before); a write after them waits for its own.
                with self._lock:
                    limits = self._sizes()
                if not ready:
                    if select.select([queue.fd], [], [], 0)[0]:
                        continue  # a write came meanwhile: take new sizes, then read it
                    # Nothing queued: every write the sizes hold has been read, and what
                    # the logs hold past their records goes in the order last seen.
                    with self._lock:
                        for wd, w in self._watches.items():
                            self._record(w, w.last, limits.get(wd))
                    quiet = True
                    continue
                data = queue.read()
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                log.error("the write-order queue failed: %s", exc)
                return
            # The runner's own files (records, status, the order file) raise most
            # events: a read without a log's write leaves the quiet sweep as it was.
            if not _writes_a_log(data):
                continue
            quiet = False
            try:
                self._batch(data, limits)
            except Exception:
                log.exception("recording the write order failed")

    def _batch(self, data: bytes, limits: dict[int, dict[str, int]]) -> None:
        per_wd: dict[int, list[str]] = {}
        ended: list[int] = []
        for wd, mask, name in queue_events(data):
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
    """`_read`, in a thread when long: a hand-over costs more than a short local read."""
    short = end - start <= INLINE_READ
    return _read(path, start, end) if short else await asyncio.to_thread(_read, path, start, end)


async def _records_off_loop(path: Path, pos: int) -> tuple[list[Piece], int]:
    """`_records_from`, in a thread when many records came since `pos`."""
    short = _size(path) - pos <= INLINE_READ
    return _records_from(path, pos) if short else await asyncio.to_thread(_records_from, path, pos)


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
