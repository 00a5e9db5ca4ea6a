"""`Client`: the daemon's requests as typed, blocking calls (each one defined in
`methods.Requests`; here the transport and the streams). Plain sockets on purpose: a
CLI call is one short exchange and should not pay for an event loop's start-up."""

from __future__ import annotations

import struct
from collections.abc import Generator, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import msgspec

from nvq import control as c
from nvq.client.answers import answer_of, fell_behind
from nvq.client.autostart import connect_unix, start_daemon
from nvq.client.errors import WENT_AWAY, ClientError, DaemonUnavailable
from nvq.client.inside_job import job_socket
from nvq.client.methods import Blocking
from nvq.control.stream_events import stream_batch_decoder
from nvq.home import Home, default_root
from nvq.model import Event
from nvq.values import MAX_INT
from nvq_runner.protocol import FrameError, FrameReader

HEADER = struct.Struct(">I")

ASK_TIMES = 3  # sends of one request the daemon never read


class WentAway(ClientError):
    """The daemon's end of the connection closed before its answer was complete.
    `unread`: it closed with the request still unread (ECONNRESET: a Unix socket's
    peer that ends with data in its queue, or before it accepted, resets it), so the
    daemon never acted on it."""

    def __init__(self, message: str, *, unread: bool = False) -> None:
        super().__init__(message)
        self.unread = unread


def went_away(exc: BaseException) -> WentAway:
    """The socket's error as WentAway; anyio (the async client) wraps it, as the cause
    of its own error."""
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    reason = (cause.strerror if isinstance(cause, OSError) else None) or exc
    return WentAway(WENT_AWAY.format(reason), unread=isinstance(cause, ConnectionResetError))


def frame(request: c.Request) -> bytes:
    try:
        payload = c.encoder.encode(request)
    except OverflowError:
        raise ClientError(f"a number is too large: the largest nvq takes is {MAX_INT}", 2) from None
    return HEADER.pack(len(payload)) + payload


class Client(Blocking):
    """Talks to the daemon of `home` (default `$NVQ_HOME`, else ~/.nvq), starting it when
    none runs unless `autostart=False`. Every method raises `ClientError` when the daemon
    refuses (its message is the one `nvq` prints) and `DaemonUnavailable` when it cannot
    be reached. Each call is its own connection: a Client holds nothing open."""

    def __init__(
        self, home: str | Path | None = None, *, autostart: bool = True, observing: bool = False
    ) -> None:
        self.root = Path(home) if home is not None else default_root()
        self.autostart = autostart
        # Only watches: starts no daemon stopped on purpose (nvq.client.stop_mark).
        self.observing = observing

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release (one connection per call); here for symmetry."""

    # ------------------------------------------------------------ transport

    def _connect(self) -> Any:
        inside = job_socket()
        path = inside or Home(self.root).socket
        try:
            return connect_unix(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if not self.autostart or inside is not None:
                raise DaemonUnavailable("no daemon is running") from None
        start_daemon(self.root, observing=self.observing)
        try:
            return connect_unix(path)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot reach the daemon at {path}: {exc}") from None

    def exchange(self, request: c.Request) -> Iterator[c.Reply]:
        """Send `request`; yield every reply frame up to and including the `Done`. A
        request the daemon never read (it was killed as the request reached it; see
        `WentAway.unread`) is sent again, to a daemon started if none runs: which of
        the kill and the request reached the socket first decides nothing. One it
        read and then died on is not: it may have acted."""
        for attempt in range(ASK_TIMES):
            replies = self._exchange_once(request)
            try:
                first = next(replies)
            except WentAway as exc:
                if exc.unread and attempt + 1 < ASK_TIMES:
                    continue
                raise
            yield first
            yield from replies
            return

    def _exchange_once(self, request: c.Request) -> Iterator[c.Reply]:
        payload = frame(request)
        sock = self._connect()
        try:
            try:
                sock.sendall(payload)
            except OSError as exc:
                raise went_away(exc) from None
            frames = FrameReader(max_message=None)  # an answer may span frames
            while True:
                try:
                    data = sock.recv(1 << 16)
                except OSError as exc:  # reset: the daemon died mid-request
                    raise went_away(exc) from None
                if not data:
                    raise WentAway(WENT_AWAY.format("it closed the connection"))
                try:
                    payloads = frames.feed(data)
                except FrameError as exc:
                    raise ClientError(f"the daemon's reply cannot be read: {exc}") from None
                for payload in payloads:
                    reply = c.reply_decoder.decode(payload)
                    yield reply
                    if isinstance(reply, c.Done):
                        return
        finally:
            sock.close()

    def open_stream(self, request: c.Request) -> Any:
        """Send `request` and hand over the connection (a socket) for a two-way stream:
        `job shell`, `job exec`, `job forward` (nvq.control.terminal)."""
        payload = frame(request)
        sock = self._connect()
        try:
            sock.sendall(payload)
        except OSError as exc:
            sock.close()
            raise ClientError(WENT_AWAY.format(exc.strerror or exc)) from None
        return sock

    def request(self, request: c.Request) -> c.Done:
        """Any request with a single answer, untyped: `Done.data` as the daemon sent it."""
        done = None
        for reply in self.exchange(request):  # to its end, so the connection closes
            if isinstance(reply, c.Done):
                done = reply
        if done is None:
            raise ClientError("no answer from the daemon")
        return answer_of(done)

    # ------------------------------------------------------------ streams

    def logs(
        self,
        id: int,
        *,
        lines: int = 50,
        follow: bool = False,
        stream: Literal["stdout", "stderr", "setup", "both"] = "stdout",
        attempt: int | None = None,
        marks: bool = False,
    ) -> Iterator[bytes]:
        """The last `lines` of its output (-1: all) as it arrives; with `follow`, until
        the job ends. `attempt`: that attempt's output (default: the latest); stream
        "both": stdout and stderr in the order written (`marks`: each line marked)."""
        for reply in self.exchange(
            c.Logs(
                id=id, lines=lines, follow=follow, stream=stream, attempt=attempt, marks=marks
            )
        ):
            if isinstance(reply, c.Chunk):
                yield reply.data
            else:
                answer_of(reply)

    def subscribe(
        self, since: int = 0, *, job: int | None = None, resume: bool = True,
        follow: c.Subscribe | None = None,
    ) -> Generator[Event, None, None]:
        """Every event after id `since`, then each one as the daemon commits it, for as
        long as the caller iterates (-1: only events from the first iteration on). With
        `resume`, a stream the daemon dropped for falling behind is picked up again
        from the last event. `follow`: the filters and detail of `queue events --follow`
        (its `since` and `job_id` are these arguments'); with `detail`, each event is a
        `StreamEvent`."""
        base = follow or c.Subscribe()
        batch = stream_batch_decoder if base.detail else c.event_batch_decoder
        while True:
            request = msgspec.structs.replace(base, since=since, job_id=job)
            for reply in self.exchange(request):
                if isinstance(reply, c.Chunk):
                    for event in batch.decode(reply.data):
                        since = event.id
                        yield event
                    continue
                again = fell_behind(reply)
                if again is None or not resume:
                    answer_of(reply)
                    return
                since = again
