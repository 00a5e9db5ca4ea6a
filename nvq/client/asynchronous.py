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
from nvq.client.autostart import WENT_AWAY, check_socket_path, refused, start_daemon
from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.client.spec import job_spec
from nvq.client.sync import _ids, answer_of, fell_behind, frame, typed
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
        check_socket_path(path)
        try:
            return await anyio.connect_unix(path)
        except PermissionError:
            raise refused(path) from None
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
        payload = frame(request)
        async with await self._connect() as stream:
            try:
                await stream.send(payload)
            except (anyio.BrokenResourceError, OSError) as exc:
                raise ClientError(WENT_AWAY.format(exc)) from None
            frames = FrameReader()
            while True:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    raise ClientError(WENT_AWAY.format("it closed the connection")) from None
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
        return await self._call(c.Submit(spec=spec), c.Submitted)

    async def jobs(
        self,
        *,
        active: bool = False,
        states: Sequence[str] | None = None,
        limit: int | None = None,
        array: int | None = None,
    ) -> list[c.JobRow]:
        """Jobs by id: only pending and running with `active`, the newest `limit`."""
        listed = c.ListJobs(
            active=active, states=list(states) if states else None, limit=limit, array=array
        )
        return await self._call(listed, list[c.JobRow])

    async def show(self, id: int, *, logs: int = 0) -> c.JobDetail:
        """One job with its events, attempts, why it waits, and `logs` lines of output."""
        return await self._call(c.ShowJob(id=id, logs=logs), c.JobDetail)

    async def why(self, id: int) -> c.WhyReport:
        """Why it waits: its reason, and per node each constraint with the numbers."""
        return await self._call(c.Why(id=id), c.WhyReport)

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
        attempt: int | None = None,
    ) -> AsyncIterator[bytes]:
        """The last `lines` of its output (-1: all) as it arrives; with `follow`, until
        the job ends. `attempt`: that attempt's output (default: the latest)."""
        async for reply in self.exchange(
            c.Logs(id=id, lines=lines, follow=follow, stream=stream, attempt=attempt)
        ):
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

    async def requeue(
        self,
        ids: int | Sequence[int],
        *,
        artifacts: str | None = None,
        command: str | None = None,
    ) -> list[c.Requeued]:
        """Run finished jobs again; `artifacts` "keep" or "fresh" (None: fresh for a
        completed job, else keep); `command` replaces the command (one job)."""
        request = c.Requeue(ids=_ids(ids), artifacts=artifacts, command=command)
        return await self._call(request, list[c.Requeued])

    async def purge(
        self,
        *,
        before: float | None = None,
        dry_run: bool = False,
        ids: Sequence[int] | None = None,
    ) -> c.Purged:
        """Forget finished jobs (that ended before `before`, a Unix time; only `ids`,
        if given). `dry_run`: forget nothing, and say which jobs it would."""
        request = c.Purge(before=before, dry_run=dry_run, ids=None if ids is None else list(ids))
        return await self._call(request, c.Purged)

    async def edit_job(self, id: int, changes: dict[str, Any]) -> Job:
        """Change what a job asks for: JobSpec field → new value (a running job: only
        its name, note, tags and priority)."""
        return await self._call(c.EditJob(id=id, changes=changes), Job)

    async def move(self, id: int, to: str) -> c.Moved:
        """Pin a job to `to` ("node" or "node:gpu"); a running one is stopped and runs
        there as a new attempt."""
        return await self._call(c.Move(id=id, to=to), c.Moved)

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

    async def gpu_history(
        self, *, since: float | None = None, node: str | None = None, step: float = 60.0
    ) -> list[c.GpuPoint]:
        """Each card's memory split and utilisation over time (one point a minute, 7
        days kept), averaged over `step` seconds, from `since` (default: 24 hours ago)."""
        return await self._call(c.GpuHistory(since=since, node=node, step=step), list[c.GpuPoint])

    async def clusters(self, name: str | None = None) -> list[c.ClusterView]:
        """Slurm clusters and their pilots (one cluster with `name`)."""
        return await self._call(c.ClusterStatus(name=name), list[c.ClusterView])

    async def cluster_scale(self, name: str, pilots: int | None) -> c.ClusterView:
        """Keep exactly `pilots` pilots; None: back to automatic scaling."""
        return await self._call(c.ClusterScale(name=name, pilots=pilots), c.ClusterView)

    async def cluster_drain(self, name: str) -> c.ClusterView:
        """Request no pilots and release each one once idle."""
        return await self._call(c.ClusterDrain(name=name), c.ClusterView)

    async def cluster_retry(self, name: str) -> c.ClusterView:
        """Request pilots again after Slurm refused one."""
        return await self._call(c.ClusterRetry(name=name), c.ClusterView)

    async def events(
        self, since: int = 0, *, limit: int | None = None, job: int | None = None
    ) -> list[Event]:
        """The event log after event id `since`."""
        return await self._call(c.Events(since=since, limit=limit, job_id=job), list[Event])

    async def subscribe(
        self, since: int = 0, *, job: int | None = None, resume: bool = True
    ) -> AsyncIterator[Event]:
        """Every event after id `since`, then each one as the daemon commits it, for as
        long as the caller iterates (-1: only events from the first iteration on). With
        `resume`, a stream the daemon dropped for falling behind is picked up again
        from the last event."""
        while True:
            request = c.Subscribe(since=since, job_id=job)
            async for reply in self.exchange(request):
                if isinstance(reply, c.Chunk):
                    for event in c.event_batch_decoder.decode(reply.data):
                        since = event.id
                        yield event
                    continue
                again = fell_behind(reply)
                if again is None or not resume:
                    answer_of(reply)
                    return
                since = again

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

    async def check(self, *, wait: float = 10.0) -> c.StoreCheck:
        """queue.db's integrity and the job ids nodes know that it does not."""
        return await self._call(c.Check(wait=wait), c.StoreCheck)

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

    async def stop_daemon(self) -> c.DaemonStopping:
        """Ask the daemon to exit; jobs keep running on their nodes (and their
        runners with them: the reply says how many)."""
        return await self._call(c.StopDaemon(), c.DaemonStopping)

    async def node_stop(
        self, node: str | None = None, *, all: bool = False, kill_jobs: bool = False
    ) -> c.NodesStopped:
        """Stop runners (kept stopped until `node_start`); `kill_jobs` cancels theirs."""
        return await self._call(c.NodeStop(node=node, all=all, kill_jobs=kill_jobs), c.NodesStopped)

    async def node_start(self, node: str) -> NodeView:
        return await self._call(c.NodeStart(node=node), NodeView)
