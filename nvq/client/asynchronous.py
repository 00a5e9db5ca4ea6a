"""`AsyncClient`: the same typed requests as `Client` (each one defined in
`methods.Requests`; here the transport and the streams), for anyio (asyncio or trio)
programs: a notebook, a TUI, a web page that must not block its event loop."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Literal

import anyio
import anyio.to_thread
import msgspec
from anyio.abc import SocketStream

from nvq import control as c
from nvq.client.answers import answer_of, fell_behind
from nvq.client.autostart import check_socket_path, refused, start_daemon
from nvq.client.errors import WENT_AWAY, ClientError, DaemonUnavailable
from nvq.client.inside_job import job_socket
from nvq.client.methods import Awaiting
from nvq.client.sync import ASK_TIMES, WentAway, frame, went_away
from nvq.control.stream_events import stream_batch_decoder
from nvq.home import Home, default_root
from nvq.model import Event
from nvq_runner.protocol import FrameError, FrameReader


class AsyncClient(Awaiting):
    """`Client`'s twin: `async with AsyncClient() as q: job = await q.submit(...)`.
    Starting a missing daemon runs in a worker thread."""

    def __init__(
        self, home: str | Path | None = None, *, autostart: bool = True, observing: bool = False
    ) -> None:
        self.root = Path(home) if home is not None else default_root()
        self.autostart = autostart
        # Only watches: starts no daemon stopped on purpose (nvq.client.stop_mark).
        self.observing = observing

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Nothing to release (one connection per call); here for symmetry."""

    # ------------------------------------------------------------ transport

    async def _connect(self) -> SocketStream:
        inside = job_socket()
        path = inside or Home(self.root).socket
        check_socket_path(path)
        try:
            return await anyio.connect_unix(path)
        except PermissionError:
            raise refused(path) from None
        except (FileNotFoundError, ConnectionRefusedError):
            if not self.autostart or inside is not None:
                raise DaemonUnavailable("no daemon is running") from None
        await anyio.to_thread.run_sync(lambda: start_daemon(self.root, observing=self.observing))
        try:
            return await anyio.connect_unix(path)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot reach the daemon at {path}: {exc}") from None

    async def exchange(self, request: c.Request) -> AsyncIterator[c.Reply]:
        """Send `request`; yield every reply frame up to and including the `Done`. A
        request the daemon never read is sent again, as `Client.exchange` does it
        (`WentAway.unread`); one it read and then died on is not."""
        for attempt in range(ASK_TIMES):
            replies = self._exchange_once(request)
            try:
                first = await replies.__anext__()
            except WentAway as exc:
                await replies.aclose()
                if exc.unread and attempt + 1 < ASK_TIMES:
                    continue
                raise
            try:
                yield first
                async for reply in replies:
                    yield reply
            finally:
                await replies.aclose()
            return

    async def _exchange_once(self, request: c.Request) -> AsyncGenerator[c.Reply, None]:
        payload = frame(request)
        async with await self._connect() as stream:
            try:
                await stream.send(payload)
            except (anyio.BrokenResourceError, OSError) as exc:
                raise went_away(exc) from None
            frames = FrameReader(max_message=None)  # an answer may span frames
            while True:
                try:
                    data = await stream.receive()
                except anyio.EndOfStream:
                    raise WentAway(WENT_AWAY.format("it closed the connection")) from None
                except (anyio.BrokenResourceError, OSError) as exc:
                    raise went_away(exc) from None
                try:
                    payloads = frames.feed(data)
                except FrameError as exc:
                    raise ClientError(f"the daemon's reply cannot be read: {exc}") from None
                for payload in payloads:
                    reply = c.reply_decoder.decode(payload)
                    yield reply
                    if isinstance(reply, c.Done):
                        return

    async def request(self, request: c.Request) -> c.Done:
        """Any request with a single answer, untyped: `Done.data` as the daemon sent it."""
        done = None
        async for reply in self.exchange(request):  # to its end, so the connection closes
            if isinstance(reply, c.Done):
                done = reply
        if done is None:
            raise ClientError("no answer from the daemon")
        return answer_of(done)

    # ------------------------------------------------------------ streams

    async def logs(
        self,
        id: int,
        *,
        lines: int = 50,
        follow: bool = False,
        stream: Literal["stdout", "stderr", "setup", "both"] = "stdout",
        attempt: int | None = None,
        marks: bool = False,
    ) -> AsyncIterator[bytes]:
        """The last `lines` of its output (-1: all) as it arrives; with `follow`, until
        the job ends. `attempt`: that attempt's output (default: the latest); stream
        "both": stdout and stderr in the order written (`marks`: each line marked)."""
        async for reply in self.exchange(
            c.Logs(
                id=id, lines=lines, follow=follow, stream=stream, attempt=attempt, marks=marks
            )
        ):
            if isinstance(reply, c.Chunk):
                yield reply.data
            else:
                answer_of(reply)

    async def subscribe(
        self, since: int = 0, *, job: int | None = None, resume: bool = True,
        follow: c.Subscribe | None = None,
    ) -> AsyncIterator[Event]:
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
            async for reply in self.exchange(request):
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

