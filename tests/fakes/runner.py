"""A scripted runner for daemon tests: real protocol frames (`nvq_runner.protocol`)
over an in-memory byte pipe instead of a socket and a process.

It keeps what a real runner keeps, a journal of durable events with seqs and the
daemon's cumulative acks, and does what a test scripts: greet with given facts and
journal position, answer `Start` with `JobStarted` (and, for jobs named in `exits`,
`JobExited` at once), exit or lose jobs on request, drop the connection, refuse to be
reached, replay unacknowledged events on every new connection. Every frame it receives
is recorded in `received`.

`FakeRunner.open` has the shape of the daemon's `link.Opener`, so `run_link` can
drive it like any node:

    async with FakeRunner(exits={1: 0}) as runner:
        tg.start_soon(run_link, core, node, runner.open)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TypeVar

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from nvq_runner import protocol as p

GIB_MB = 1024
T = TypeVar("T")


class PipeEnd(anyio.abc.ByteStream):
    """One end of an in-memory duplex byte pipe. `receive` raises `anyio.EndOfStream`
    once the other end closed, as a socket stream does."""

    def __init__(
        self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._send = send
        self._receive = receive

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._receive.receive()

    async def send(self, item: bytes) -> None:
        self._send.send_nowait(item)  # unbounded: a slow reader never blocks a writer

    def send_nowait(self, item: bytes) -> None:
        self._send.send_nowait(item)

    async def send_eof(self) -> None:
        self._send.close()

    async def aclose(self) -> None:
        self._send.close()
        self._receive.close()


def byte_pipe() -> tuple[PipeEnd, PipeEnd]:
    """Two connected ends: what one sends, the other receives."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](math.inf)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](math.inf)
    return PipeEnd(a_send, a_receive), PipeEnd(b_send, b_receive)


def fake_gpus(count: int = 2, total_mb: int = 24 * GIB_MB) -> list[p.GpuInfo]:
    return [p.GpuInfo(i, "Fake A100", f"GPU-fake-{i}", total_mb) for i in range(count)]


class FakeRunner:
    def __init__(
        self,
        *,
        hostname: str = "fake",
        gpus: list[p.GpuInfo] | None = None,
        cuda: str | None = "13.0",
        mem_total_mb: int = 64 * GIB_MB,
        journal_id: str = "journal-1",
        features: list[str] | None = None,
        exits: dict[int, int] | None = None,
        chunk: int | None = None,
    ) -> None:
        self.hostname = hostname
        self.gpus = fake_gpus() if gpus is None else gpus
        self.cuda = cuda
        self.mem_total_mb = mem_total_mb
        self.journal_id = journal_id
        self.features = [] if features is None else features
        self.exits = {} if exits is None else exits  # job id → exit code right after start
        self.chunk = chunk  # split every frame into pieces of this many bytes
        self.answer_starts = True  # False: record Start frames, start nothing
        self.take_acks = True  # False: the daemon's acks are lost (so events replay)
        self.reachable = True  # False: `open` fails, as an unreachable node does
        self.journal: list[p.JournaledEvent] = []  # every event ever written
        self.acked = 0
        self.active: dict[tuple[int, int], p.ActiveJob] = {}
        self.seen_attempts: set[tuple[int, int]] = set()
        self.received: list[p.DaemonMsg] = []  # every frame from the daemon
        self.sent: list[p.RunnerMsg] = []  # every frame to the daemon
        self.connections = 0
        self._conn: PipeEnd | None = None
        self._changed = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------ lifetime

    async def __aenter__(self) -> FakeRunner:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    async def open(self) -> PipeEnd:
        """A new connection, as `link.Opener`: the daemon gets one end, this runner
        serves the other (Hello, then the unacknowledged journal, then a Sample)."""
        if not self.reachable:
            raise OSError(f"{self.hostname} is unreachable")
        assert self._tg is not None, "use the runner as `async with FakeRunner() as runner`"
        daemon_end, runner_end = byte_pipe()
        self._tg.start_soon(self._serve, runner_end)
        return daemon_end

    async def _serve(self, conn: PipeEnd) -> None:
        if self._conn is not None:  # a new connection replaces the old one, as a runner's
            await self._conn.aclose()
        self._conn = conn
        self.connections += 1
        self.send(self.hello())
        for event in self.unacked:
            self.send(event)
        self.send(self.sample())
        frames = p.FrameReader()
        try:
            while True:
                data = await conn.receive()
                for payload in frames.feed(data):
                    msg = p.decode_daemon_payload(payload)
                    self.received.append(msg)
                    self._dispatch(msg)
                    self._signal()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
        finally:
            await conn.aclose()
            if self._conn is conn:
                self._conn = None
            self._signal()

    # ------------------------------------------------------------ what the daemon sees

    @property
    def head(self) -> int:
        return self.journal[-1].seq if self.journal else 0

    @property
    def unacked(self) -> list[p.JournaledEvent]:
        return [e for e in self.journal if e.seq > self.acked]

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def hello(self) -> p.Hello:
        return p.Hello(
            hostname=self.hostname,
            runner_version="fake",
            protocol=p.PROTOCOL_VERSION,
            backend="fake",
            cuda=self.cuda,
            driver=None,
            mem_total_mb=self.mem_total_mb,
            cpus=8,
            gpus=list(self.gpus),
            active=list(self.active.values()),
            journal_head=self.head,
            boot_id="boot-1",
            pid=4242,
            journal_id=self.journal_id,
            features=list(self.features),
        )

    def sample(self) -> p.Sample:
        """Idle cards: nothing foreign holds memory, so placement sees them all free."""
        return p.Sample(
            time=time.time(),
            gpus=[p.GpuSample(g.index, g.total_mb, 0, 0, []) for g in self.gpus],
            mem_free_mb=self.mem_total_mb,
            progress={},
        )

    def send(self, msg: p.RunnerMsg) -> None:
        """One frame to the daemon now (dropped when no daemon is connected)."""
        if self._conn is None:
            return
        frame = p.encode_frame(msg)
        step = self.chunk or len(frame)
        try:
            for i in range(0, len(frame), step):
                self._conn.send_nowait(frame[i : i + step])
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        self.sent.append(msg)

    def send_together(self, msgs: Sequence[p.RunnerMsg]) -> None:
        """Several frames in one write, as a busy runner's socket delivers them."""
        if self._conn is None:
            return
        self._conn.send_nowait(b"".join(p.encode_frame(m) for m in msgs))
        self.sent.extend(msgs)

    def record(self, build: Callable[[int], p.JournaledEvent], *, deliver: bool = True) -> int:
        """Journal an event under the next seq and send it (unless `deliver` is False:
        written, but the connection went before it was sent). Returns its seq."""
        event = build(self.head + 1)
        self.journal.append(event)
        if deliver:
            self.send(event)
        self._signal()
        return event.seq

    # ------------------------------------------------------------ scripted actions

    def start(self, msg: p.Start) -> None:
        key = (msg.job_id, msg.attempt)
        if key in self.seen_attempts:
            return  # Start is idempotent per attempt
        self.seen_attempts.add(key)
        now = time.time()
        self.active[key] = p.ActiveJob(msg.job_id, msg.attempt, 10_000 + msg.job_id, now)
        self.record(
            lambda seq: p.JobStarted(seq, msg.job_id, msg.attempt, 10_000 + msg.job_id, now)
        )
        if msg.job_id in self.exits:
            self.exit(msg.job_id, self.exits[msg.job_id])

    def exit(
        self,
        job_id: int,
        code: int = 0,
        *,
        attempt: int | None = None,
        reason: p.ExitReason = "exit",
        deliver: bool = True,
    ) -> int:
        """End a running attempt (the newest of the job's, unless named)."""
        key = self._attempt(job_id, attempt)
        del self.active[key]
        signal = code - 128 if code > 128 else None
        return self.record(
            lambda seq: p.JobExited(seq, key[0], key[1], code, signal, time.time(), reason),
            deliver=deliver,
        )

    def lose(self, job_id: int, *, attempt: int | None = None, deliver: bool = True) -> int:
        key = self._attempt(job_id, attempt)
        del self.active[key]
        return self.record(
            lambda seq: p.JobLost(seq, key[0], key[1], "vanished", time.time()), deliver=deliver
        )

    def _attempt(self, job_id: int, attempt: int | None) -> tuple[int, int]:
        keys = [k for k in self.active if k[0] == job_id and attempt in (None, k[1])]
        assert keys, f"job {job_id} (attempt {attempt}) is not running here"
        return max(keys)

    async def drop(self) -> None:
        """Close the current connection from the runner's side."""
        if self._conn is not None:
            await self._conn.aclose()
            self._conn = None
            self._signal()

    def _dispatch(self, msg: p.DaemonMsg) -> None:
        if isinstance(msg, p.Start):
            if self.answer_starts:
                self.start(msg)
        elif isinstance(msg, p.Kill):
            key = (msg.job_id, msg.attempt)
            if key in self.active:
                self.exit(msg.job_id, 128 + 15, attempt=msg.attempt, reason="killed")
            elif key not in self.seen_attempts:
                self.record(
                    lambda seq: p.JobLost(seq, key[0], key[1], "never started", time.time())
                )
        elif isinstance(msg, p.Ack):
            if self.take_acks:
                self.acked = max(self.acked, msg.seq)
        elif isinstance(msg, p.Sync):
            self.send(self.sample())

    # ------------------------------------------------------------ waiting

    def _signal(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, predicate: Callable[[], bool], timeout: float = 60) -> None:
        """Wait until `predicate()` holds, re-checking after every frame or change (the
        deadline only stops a hung test: a loaded machine can take many seconds)."""
        with anyio.fail_after(timeout):
            while not predicate():
                await self._changed.wait()

    def of_type(self, kind: type[T]) -> list[T]:
        """The frames of one kind received so far."""
        return [m for m in self.received if isinstance(m, kind)]
