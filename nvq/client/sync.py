"""`Client`: the daemon's requests as typed, blocking calls. Plain sockets on purpose:
a CLI call is one short exchange and should not pay for an event loop's start-up."""

from __future__ import annotations

import struct
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

import msgspec

from nvq import control as c
from nvq.client.autostart import WENT_AWAY, connect_unix, start_daemon
from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.client.spec import job_spec
from nvq.home import Home, default_root
from nvq.model import Event, Job, JobSpec, NodeView
from nvq.values import MAX_INT
from nvq_runner.protocol import FrameReader

T = TypeVar("T")
HEADER = struct.Struct(">I")


def frame(request: c.Request) -> bytes:
    try:
        payload = c.encoder.encode(request)
    except OverflowError:
        raise ClientError(f"a number is too large: the largest nvq takes is {MAX_INT}", 2) from None
    return HEADER.pack(len(payload)) + payload


def typed(done: c.Done, kind: type[T]) -> T:
    try:
        return msgspec.convert(done.data, kind)
    except msgspec.ValidationError as exc:
        raise ClientError(f"unexpected reply from the daemon: {exc}") from None


def answer_of(reply: c.Reply) -> c.Done:
    """The final `Done`, or the error it carries raised as a ClientError."""
    assert isinstance(reply, c.Done)
    if reply.error is not None:
        raise ClientError(reply.error, reply.exit_code or 1)
    return reply


def fell_behind(reply: c.Reply) -> int | None:
    """The id to subscribe again from, when a subscription's `Done` says it fell behind."""
    if isinstance(reply, c.Done) and isinstance(reply.data, dict):
        last = reply.data.get("fell_behind")
        if isinstance(last, int):
            return last
    return None


class Client:
    """Talks to the daemon of `home` (default `$NVQ_HOME`, else ~/.nvq), starting it when
    none runs unless `autostart=False`. Every method raises `ClientError` when the daemon
    refuses (its message is the one `nvq` prints) and `DaemonUnavailable` when it cannot
    be reached. Each call is its own connection: a Client holds nothing open."""

    def __init__(self, home: str | Path | None = None, *, autostart: bool = True) -> None:
        self.root = Path(home) if home is not None else default_root()
        self.autostart = autostart

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
        path = Home(self.root).socket
        try:
            return connect_unix(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if not self.autostart:
                raise DaemonUnavailable("no daemon is running") from None
        start_daemon(self.root)
        try:
            return connect_unix(path)
        except OSError as exc:
            raise DaemonUnavailable(f"cannot reach the daemon at {path}: {exc}") from None

    def exchange(self, request: c.Request) -> Iterator[c.Reply]:
        """Send `request`; yield every reply frame up to and including the `Done`."""
        payload = frame(request)
        sock = self._connect()
        try:
            try:
                sock.sendall(payload)
            except OSError as exc:
                raise ClientError(WENT_AWAY.format(exc.strerror or exc)) from None
            frames = FrameReader()
            while True:
                try:
                    data = sock.recv(1 << 16)
                except OSError as exc:  # reset: the daemon died mid-request
                    raise ClientError(WENT_AWAY.format(exc.strerror or exc)) from None
                if not data:
                    raise ClientError(WENT_AWAY.format("it closed the connection"))
                for payload in frames.feed(data):
                    reply = c.reply_decoder.decode(payload)
                    yield reply
                    if isinstance(reply, c.Done):
                        return
        finally:
            sock.close()

    def request(self, request: c.Request) -> c.Done:
        """Any request with a single answer, untyped: `Done.data` as the daemon sent it."""
        done = None
        for reply in self.exchange(request):  # to its end, so the connection closes
            if isinstance(reply, c.Done):
                done = reply
        if done is None:
            raise ClientError("no answer from the daemon")
        return answer_of(done)

    def _call(self, request: c.Request, kind: type[T]) -> T:
        return typed(self.request(request), kind)

    # ------------------------------------------------------------ jobs

    def submit(self, command: list[str] | str, **options: Any) -> c.Submitted:
        """Queue a job: `submit(["python", "train.py"], vram="20GiB", gpus=1)`. Options
        are JobSpec's fields; `vram`/`memory` take "20GiB" (or MiB), `timeout` and
        `max_runtime` take "2h" (or seconds)."""
        return self.submit_spec(job_spec(command, **options))

    def submit_spec(self, spec: JobSpec) -> c.Submitted:
        return self._call(c.Submit(spec=spec), c.Submitted)

    def jobs(
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
        return self._call(listed, list[c.JobRow])

    def show(self, id: int, *, logs: int = 0) -> c.JobDetail:
        """One job with its events, attempts, why it waits, and `logs` lines of output."""
        return self._call(c.ShowJob(id=id, logs=logs), c.JobDetail)

    def why(self, id: int) -> c.WhyReport:
        """Why it waits: its reason, and per node each constraint with the numbers."""
        return self._call(c.Why(id=id), c.WhyReport)

    def wait(self, ids: int | Sequence[int], timeout: float | None = None) -> c.WaitResult:
        """Block until the jobs end (or `timeout` seconds pass: exit_code 2)."""
        done = self.request(c.Wait(ids=_ids(ids), timeout=timeout))
        return c.WaitResult(jobs=typed(done, list[Job]), exit_code=done.exit_code)

    def logs(
        self,
        id: int,
        *,
        lines: int = 50,
        follow: bool = False,
        stream: Literal["stdout", "stderr", "setup"] = "stdout",
        attempt: int | None = None,
    ) -> Iterator[bytes]:
        """The last `lines` of its output (-1: all) as it arrives; with `follow`, until
        the job ends. `attempt`: that attempt's output (default: the latest)."""
        for reply in self.exchange(
            c.Logs(id=id, lines=lines, follow=follow, stream=stream, attempt=attempt)
        ):
            if isinstance(reply, c.Chunk):
                yield reply.data
            else:
                answer_of(reply)

    def cancel(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return self._call(c.Cancel(ids=_ids(ids), array=array), list[Job])

    def release(self, ids: int | Sequence[int]) -> list[Job]:
        """Run held jobs without the prerequisites that ended badly."""
        return self._call(c.Release(ids=_ids(ids)), list[Job])

    def note(
        self, id: int, text: str | None = None, *, append: str | None = None, clear: bool = False
    ) -> Job:
        return self._call(c.Note(id=id, text=text, append=append, clear=clear), Job)

    def result(self, id: int, *, set_json: str | None = None) -> Any:
        """The job's result.json payload; `set_json` stores this JSON text instead."""
        return self.request(c.Result(id=id, set_json=set_json)).data

    def requeue(
        self,
        ids: int | Sequence[int],
        *,
        artifacts: str | None = None,
        command: str | None = None,
    ) -> list[c.Requeued]:
        """Run finished jobs again; `artifacts` "keep" or "fresh" (None: fresh for a
        completed job, else keep); `command` replaces the command (one job)."""
        request = c.Requeue(ids=_ids(ids), artifacts=artifacts, command=command)
        return self._call(request, list[c.Requeued])

    def purge(
        self,
        *,
        before: float | None = None,
        dry_run: bool = False,
        ids: Sequence[int] | None = None,
    ) -> c.Purged:
        """Forget finished jobs (that ended before `before`, a Unix time; only `ids`,
        if given). `dry_run`: forget nothing, and say which jobs it would."""
        request = c.Purge(before=before, dry_run=dry_run, ids=None if ids is None else list(ids))
        return self._call(request, c.Purged)

    def edit_job(self, id: int, changes: dict[str, Any]) -> Job:
        """Change what a job asks for: JobSpec field → new value (a running job: only
        its name, note, tags and priority)."""
        return self._call(c.EditJob(id=id, changes=changes), Job)

    def edit(
        self, id: int, *, drop_after: Sequence[int] = (), add_after: Sequence[int] = ()
    ) -> Job:
        request = c.Edit(id=id, drop_after=list(drop_after), add_after=list(add_after))
        return self._call(request, Job)

    def priority(
        self,
        ids: int | Sequence[int],
        change: str | None = None,
        *,
        up: int | None = None,
        array: bool = False,
    ) -> list[Job]:
        """`change` "5" sets, "+1"/"-2" adjust; or move `up` places (negative: down)."""
        request = c.Priority(ids=_ids(ids), change=change, up=up, array=array)
        return self._call(request, list[Job])

    def pause(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return self._call(c.Pause(ids=_ids(ids), array=array), list[Job])

    def resume(self, ids: int | Sequence[int], *, array: bool = False) -> list[Job]:
        return self._call(c.Resume(ids=_ids(ids), array=array), list[Job])

    def move(self, id: int, to: str) -> c.Moved:
        """Pin a job to `to` ("node" or "node:gpu"); a running one is stopped and runs
        there as a new attempt."""
        return self._call(c.Move(id=id, to=to), c.Moved)

    def artifacts(self, id: int) -> c.Artifacts:
        return self._call(c.JobArtifacts(id=id), c.Artifacts)

    # ------------------------------------------------------------ the queue

    def status(self) -> c.QueueStatus:
        return self._call(c.Status(), c.QueueStatus)

    def nodes(self, *, procs: bool = False, include_ignored: bool = False) -> list[NodeView]:
        return self._call(c.Nodes(procs=procs, include_ignored=include_ignored), list[NodeView])

    def node_flag(self, node: str, flag: Literal["drained", "ignored"], value: bool) -> NodeView:
        """Drain (or ignore) a node, or undo it."""
        return self._call(c.NodeFlag(node=node, flag=flag, value=value), NodeView)

    def bootstrap(self, node: str, *, force: bool = False) -> c.Bootstrapped:
        return self._call(c.Bootstrap(node=node, force=force), c.Bootstrapped)

    def gpu_history(
        self, *, since: float | None = None, node: str | None = None, step: float = 60.0
    ) -> list[c.GpuPoint]:
        """Each card's memory split and utilisation over time (one point a minute, 7
        days kept), averaged over `step` seconds, from `since` (default: 24 hours ago)."""
        return self._call(c.GpuHistory(since=since, node=node, step=step), list[c.GpuPoint])

    def clusters(self, name: str | None = None) -> list[c.ClusterView]:
        """Slurm clusters and their pilots (one cluster with `name`)."""
        return self._call(c.ClusterStatus(name=name), list[c.ClusterView])

    def cluster_scale(self, name: str, pilots: int | None) -> c.ClusterView:
        """Keep exactly `pilots` pilots; None: back to automatic scaling."""
        return self._call(c.ClusterScale(name=name, pilots=pilots), c.ClusterView)

    def cluster_drain(self, name: str) -> c.ClusterView:
        """Request no pilots and release each one once idle."""
        return self._call(c.ClusterDrain(name=name), c.ClusterView)

    def cluster_retry(self, name: str) -> c.ClusterView:
        """Request pilots again after Slurm refused one."""
        return self._call(c.ClusterRetry(name=name), c.ClusterView)

    def events(
        self, since: int = 0, *, limit: int | None = None, job: int | None = None
    ) -> list[Event]:
        """The event log after event id `since`."""
        return self._call(c.Events(since=since, limit=limit, job_id=job), list[Event])

    def subscribe(
        self, since: int = 0, *, job: int | None = None, resume: bool = True
    ) -> Generator[Event, None, None]:
        """Every event after id `since`, then each one as the daemon commits it, for as
        long as the caller iterates (-1: only events from the first iteration on). With
        `resume`, a stream the daemon dropped for falling behind is picked up again
        from the last event."""
        while True:
            request = c.Subscribe(since=since, job_id=job)
            for reply in self.exchange(request):
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

    def alerts(self, *, include_acked: bool = False) -> list[c.Alert]:
        return self._call(c.Alerts(include_acked=include_acked), list[c.Alert])

    def ack(self, ids: Sequence[int] | None = None) -> list[c.Alert]:
        """Acknowledge these alerts (None: every open one)."""
        return self._call(c.Ack(ids=None if ids is None else list(ids)), list[c.Alert])

    def pull(self, id: int, paths: Sequence[str] = ()) -> c.Pulled:
        """Copy job `id`'s working directory (or `paths` in it) and artifacts into a
        staging directory on the queue host (`Pulled.path`), to be moved by the caller."""
        return self._call(c.Pull(id=id, paths=list(paths)), c.Pulled)

    def gc(self) -> c.GcDone:
        """Free the queue host's snapshot blobs that no job in the queue references."""
        return self._call(c.Gc(), c.GcDone)

    def backup(self, path: str | None = None) -> c.BackupMade:
        """A snapshot of queue.db at `path` (absolute, on the queue host)."""
        return self._call(c.Backup(path=path), c.BackupMade)

    def check(self, *, wait: float = 10.0) -> c.StoreCheck:
        """queue.db's integrity and the job ids nodes know that it does not."""
        return self._call(c.Check(wait=wait), c.StoreCheck)

    def lanes(self) -> list[c.LaneStatus]:
        return self._call(c.Lanes(), list[c.LaneStatus])

    def lane(
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
        return self._call(request, c.LaneDetail)

    def busy(self, node: str, mode: str | None = None) -> c.BusyView:
        """Whether a node counts as busy; `mode` on, off or auto sets it."""
        return self._call(c.BusyMode(node=node, mode=mode), c.BusyView)

    def busy_assign(self, *, forbid: bool) -> c.BusyAssignment:
        return self._call(c.BusyAssign(forbid=forbid), c.BusyAssignment)

    # ------------------------------------------------------------ the daemon

    def ping(self) -> c.Pong:
        return self._call(c.Ping(), c.Pong)

    def stop_daemon(self) -> c.DaemonStopping:
        """Ask the daemon to exit; jobs keep running on their nodes (and their
        runners with them: the reply says how many)."""
        return self._call(c.StopDaemon(), c.DaemonStopping)

    def node_stop(
        self, node: str | None = None, *, all: bool = False, kill_jobs: bool = False
    ) -> c.NodesStopped:
        """Stop runners (kept stopped until `node_start`); `kill_jobs` cancels theirs."""
        return self._call(c.NodeStop(node=node, all=all, kill_jobs=kill_jobs), c.NodesStopped)

    def node_start(self, node: str) -> NodeView:
        return self._call(c.NodeStart(node=node), NodeView)


def _ids(ids: int | Sequence[int]) -> list[int]:
    return [ids] if isinstance(ids, int) else list(ids)
