"""`AsyncClient`: the same typed requests as `Client`, for anyio (asyncio or trio)
programs: a notebook, a TUI, a web page that must not block its event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import SocketStream

from nvq import control as c
from nvq.client.autostart import start_daemon
from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.client.spec import job_spec
from nvq.client.sync import _ids, answer_of, frame, typed
from nvq.home import Home, default_root
from nvq.model import Event, Job, JobSpec, NodeView
from nvq_runner.protocol import FrameReader

T = TypeVar("T")


class AsyncClient:
    """`Client`'s twin: `async with AsyncClient() as q: job = await q.submit(...)`.
    Starting a missing daemon runs in a worker thread."""

    def __init__(self, home: str | Path | None = None, *, autostart: bool = True) -> None:
        self.root = Path(home) if home is not None else default_root()
        self.autostart = autostart

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
        path = Home(self.root).socket
        try:
            return await anyio.connect_unix(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if not self.autostart:
                raise DaemonUnavailable("no daemon is running") from None
        await anyio.to_thread.run_sync(start_daemon, self.root)
        try:
            return await anyio.connect_unix(path)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot reach the daemon at {path}: {exc}") from None

    async def exchange(self, request: c.Request) -> AsyncIterator[c.Reply]:
        """Send `request`; yield every reply frame up to and including the `Done`."""
        async with await self._connect() as stream:
            await stream.send(frame(request))
            frames = FrameReader()
            while True:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    raise ClientError(
                        "the daemon closed the connection without answering"
                    ) from None
                for payload in frames.feed(data):
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

    async def _call(self, request: c.Request, kind: type[T]) -> T:
        return typed(await self.request(request), kind)

    # ------------------------------------------------------------ jobs

    async def submit(self, command: list[str] | str, **options: Any) -> Job:
        """Queue a job: `submit(["python", "train.py"], vram="20GiB", gpus=1)`. Options
        are JobSpec's fields; `vram`/`memory` take "20GiB" (or MiB), `timeout` and
        `max_runtime` take "2h" (or seconds)."""
        return await self.submit_spec(job_spec(command, **options))

    async def submit_spec(self, spec: JobSpec) -> Job:
        return await self._call(c.Submit(spec=spec), Job)

    async def jobs(
        self,
        *,
        active: bool = False,
        states: Sequence[str] | None = None,
        limit: int | None = None,
        array: int | None = None,
    ) -> list[Job]:
        """Jobs by id: only pending and running with `active`, the newest `limit`."""
        listed = c.ListJobs(
            active=active, states=list(states) if states else None, limit=limit, array=array
        )
        return await self._call(listed, list[Job])

    async def show(self, id: int, *, logs: int = 0) -> c.JobDetail:
        """One job with its events, attempts, why it waits, and `logs` lines of output."""
        return await self._call(c.ShowJob(id=id, logs=logs), c.JobDetail)

    async def wait(self, ids: int | Sequence[int], timeout: float | None = None) -> c.WaitResult:
        """Block until the jobs end (or `timeout` seconds pass: exit_code 2)."""
        done = await self.request(c.Wait(ids=_ids(ids), timeout=timeout))
        return c.WaitResult(jobs=typed(done, list[Job]), exit_code=done.exit_code)

    async def logs(
        self,
        id: int,
        *,
        lines: int = 50,
        follow: bool = False,
        stream: Literal["stdout", "stderr", "setup"] = "stdout",
    ) -> AsyncIterator[bytes]:
        """The last `lines` of its output (-1: all) as it arrives; with `follow`, until
        the job ends."""
        async for reply in self.exchange(c.Logs(id=id, lines=lines, follow=follow, stream=stream)):
            if isinstance(reply, c.Chunk):
                yield reply.data
            else:
                answer_of(reply)

    async def cancel(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return await self._call(c.Cancel(ids=_ids(ids), array=array), list[Job])

    async def release(self, ids: int | Sequence[int]) -> list[Job]:
        """Run held jobs without the prerequisites that ended badly."""
        return await self._call(c.Release(ids=_ids(ids)), list[Job])

    async def note(
        self, id: int, text: str | None = None, *, append: str | None = None, clear: bool = False
    ) -> Job:
        return await self._call(c.Note(id=id, text=text, append=append, clear=clear), Job)

    async def result(self, id: int, *, set_json: str | None = None) -> Any:
        """The job's result.json payload; `set_json` stores this JSON text instead."""
        return (await self.request(c.Result(id=id, set_json=set_json))).data

    async def requeue(self, ids: int | Sequence[int]) -> list[Job]:
        return await self._call(c.Requeue(ids=_ids(ids)), list[Job])

    async def purge(self, *, before: float | None = None) -> c.Purged:
        """Forget finished jobs (that ended before `before`, a Unix time)."""
        return await self._call(c.Purge(before=before), c.Purged)

    async def edit(
        self, id: int, *, drop_after: Sequence[int] = (), add_after: Sequence[int] = ()
    ) -> Job:
        request = c.Edit(id=id, drop_after=list(drop_after), add_after=list(add_after))
        return await self._call(request, Job)

    async def priority(
        self,
        ids: int | Sequence[int],
        change: str | None = None,
        *,
        up: int | None = None,
        array: bool = False,
    ) -> list[Job]:
        """`change` "5" sets, "+1"/"-2" adjust; or move `up` places (negative: down)."""
        request = c.Priority(ids=_ids(ids), change=change, up=up, array=array)
        return await self._call(request, list[Job])

    async def pause(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return await self._call(c.Pause(ids=_ids(ids), array=array), list[Job])

    async def resume(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return await self._call(c.Resume(ids=_ids(ids), array=array), list[Job])

    async def artifacts(self, id: int) -> c.Artifacts:
        return await self._call(c.JobArtifacts(id=id), c.Artifacts)

    # ------------------------------------------------------------ the queue

    async def status(self) -> c.QueueStatus:
        return await self._call(c.Status(), c.QueueStatus)

    async def nodes(self, *, procs: bool = False, include_ignored: bool = False) -> list[NodeView]:
        return await self._call(
            c.Nodes(procs=procs, include_ignored=include_ignored), list[NodeView]
        )

    async def node_flag(
        self, node: str, flag: Literal["drained", "ignored"], value: bool
    ) -> NodeView:
        """Drain (or ignore) a node, or undo it."""
        return await self._call(c.NodeFlag(node=node, flag=flag, value=value), NodeView)

    async def bootstrap(self, node: str, *, force: bool = False) -> c.Bootstrapped:
        return await self._call(c.Bootstrap(node=node, force=force), c.Bootstrapped)

    async def events(
        self, since: int = 0, *, limit: int | None = None, job: int | None = None
    ) -> list[Event]:
        """The event log after event id `since`."""
        return await self._call(c.Events(since=since, limit=limit, job_id=job), list[Event])

    async def alerts(self, *, include_acked: bool = False) -> list[c.Alert]:
        return await self._call(c.Alerts(include_acked=include_acked), list[c.Alert])

    async def ack(self, ids: Sequence[int] | None = None) -> list[c.Alert]:
        """Acknowledge these alerts (None: every open one)."""
        return await self._call(c.Ack(ids=None if ids is None else list(ids)), list[c.Alert])

    async def pull(self, id: int, paths: Sequence[str] = ()) -> c.Pulled:
        """Copy job `id`'s working directory (or `paths` in it) and artifacts into a
        staging directory on the queue host (`Pulled.path`), to be moved by the caller."""
        return await self._call(c.Pull(id=id, paths=list(paths)), c.Pulled)

    async def gc(self) -> c.GcDone:
        """Free the queue host's snapshot blobs that no job in the queue references."""
        return await self._call(c.Gc(), c.GcDone)

    async def backup(self, path: str | None = None) -> c.BackupMade:
        """A snapshot of queue.db at `path` (absolute, on the queue host)."""
        return await self._call(c.Backup(path=path), c.BackupMade)

    async def lanes(self) -> list[c.LaneStatus]:
        return await self._call(c.Lanes(), list[c.LaneStatus])

    async def lane(
        self,
        lane: str,
        action: str | None = None,
        ids: Sequence[int] = (),
        *,
        to: str | None = None,
        before: int | None = None,
        at: str | None = None,
    ) -> c.LaneDetail:
        """One lane in running order; an `action` (move, swap, skip, assign, pause,
        resume) changes it first."""
        request = c.Lane(lane=lane, action=action, ids=list(ids), to=to, before=before, at=at)
        return await self._call(request, c.LaneDetail)

    async def busy(self, node: str, mode: str | None = None) -> c.BusyView:
        """Whether a node counts as busy; `mode` on, off or auto sets it."""
        return await self._call(c.BusyMode(node=node, mode=mode), c.BusyView)

    async def busy_assign(self, *, forbid: bool) -> c.BusyAssignment:
        return await self._call(c.BusyAssign(forbid=forbid), c.BusyAssignment)

    # ------------------------------------------------------------ the daemon

    async def ping(self) -> c.Pong:
        return await self._call(c.Ping(), c.Pong)

    async def stop_daemon(self) -> None:
        """Ask the daemon to exit; jobs keep running on their nodes."""
        await self.request(c.StopDaemon())
