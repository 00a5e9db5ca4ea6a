"""Every request of `Client` and `AsyncClient`, defined once: what each method sends
and how its answer is read. A method here builds the request; `Client` binds it as a
blocking call and `AsyncClient` as an awaitable one (see `Call`), so adding a request
to both clients is one method in `Requests`. Streams (`logs`, `subscribe`) iterate
differently in each and are written in each client.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, Generic, Literal, ParamSpec, TypeVar, overload

from nvq import control as c
from nvq.client.answers import typed
from nvq.client.spec import job_spec
from nvq.domain.report import UsageReport
from nvq.domain.reservations import CardReservation
from nvq.model import Event, Job, JobSpec, NodeView

P = ParamSpec("P")
T = TypeVar("T")


class Call(Generic[P, T]):
    """One request method: `build` makes the request from the caller's arguments,
    `read` turns the daemon's `Done` into what the method returns. Looked up on a
    client it is a bound method of that client's kind: blocking on `Client`,
    awaitable on `AsyncClient`."""

    def __init__(
        self, build: Callable[Concatenate[Any, P], c.Request], read: Callable[[c.Done], T]
    ) -> None:
        self.build = build
        self.read = read
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self._signature: inspect.Signature | None = None

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Call[P, T]: ...
    @overload
    def __get__(self, obj: Blocking, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Awaiting, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Requests | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        method = obj._bind(self)
        method.__doc__, method.__name__ = self.__doc__, self.__name__
        method.__signature__ = self.signature()  # type: ignore[attr-defined]
        return method

    def signature(self) -> inspect.Signature:
        """The caller's parameters (for help() and editors), without `self`: made once,
        on first use, rather than for every method when the module loads."""
        if self._signature is None:
            sig = inspect.signature(self.build)
            self._signature = sig.replace(
                parameters=list(sig.parameters.values())[1:],
                return_annotation=inspect.Signature.empty,
            )
        return self._signature


Build = Callable[Concatenate[Any, P], c.Request]


def returns(request: type[c.Request], kind: type[T]) -> Callable[[Build[P]], Call[P, T]]:
    """The answer to `request` is `Done.data` decoded into `kind`: the reply
    nvq.control.REPLIES names for it (written here too so that the method's type is
    known statically; a mismatch fails on import)."""
    if c.REPLIES[request] != kind:
        raise TypeError(f"{request.__name__} is answered with {c.REPLIES[request]}, not {kind}")
    return reads(lambda done: typed(done, kind))


def reads(read: Callable[[c.Done], T]) -> Callable[[Build[P]], Call[P, T]]:
    """The answer is `read(done)`."""

    def make(build: Build[P]) -> Call[P, T]:
        return Call(build, read)

    return make


def _wait_result(done: c.Done) -> c.WaitResult:
    jobs = typed(done, list[Job])
    going = [j.id for j in jobs if not j.state.finished]
    return c.WaitResult(jobs=jobs, exit_code=done.exit_code, still_going=going)


def _data(done: c.Done) -> Any:
    return done.data


def _ids(ids: int | Sequence[int]) -> list[int]:
    return [ids] if isinstance(ids, int) else list(ids)


class Requests:
    """The requests both clients make, each returning the request it sends."""

    def _bind(self, call: Call[P, T]) -> Callable[P, Any]:
        raise NotImplementedError

    # ------------------------------------------------------------ jobs

    @returns(c.Submit, c.Submitted)
    def submit(self, /, command: list[str] | str, **options: Any) -> c.Request:
        """Queue a job: `submit(["python", "train.py"], vram="20GiB", gpus=1)`. Options
        are JobSpec's fields; `vram`/`memory` take "20GiB" (or MiB), `timeout` and
        `max_runtime` take "2h" (or seconds)."""
        return c.Submit(spec=job_spec(command, **options))

    @returns(c.Submit, c.Submitted)
    def submit_spec(self, spec: JobSpec) -> c.Request:
        return c.Submit(spec=spec)

    @returns(c.SubmitDry, c.SubmitPreview)
    def submit_preview(self, spec: JobSpec) -> c.Request:
        """Every check of a submit, then where it would start now or why it would wait."""
        return c.SubmitDry(spec=spec)

    @returns(c.ListJobs, list[c.JobRow])
    def jobs(
        self,
        *,
        active: bool = False,
        states: Sequence[str] | None = None,
        limit: int | None = None,
        array: int | None = None,
    ) -> c.Request:
        """Jobs by id: only pending and running with `active`, the newest `limit`."""
        return c.ListJobs(
            active=active, states=list(states) if states else None, limit=limit, array=array
        )

    @returns(c.JobWindow, c.JobPage)
    def job_window(self, window: c.JobWindow) -> c.Request:
        """`job ls`: the live jobs and the newest finished ones, narrowed by `window`'s
        filters; `more` says whether the window left jobs out."""
        return window

    @returns(c.ShowJob, c.JobDetail)
    def show(self, id: int, *, logs: int = 0, reveal: bool = False) -> c.Request:
        """One job with its events, attempts, why it waits, and `logs` lines of output;
        `reveal`: secret-looking values will be shown (the owner's and admins' right)."""
        return c.ShowJob(id=id, logs=logs, reveal=reveal)

    @returns(c.Why, c.WhyReport)
    def why(self, id: int) -> c.Request:
        """Why it waits: its reason, and per node each constraint with the numbers."""
        return c.Why(id=id)

    @returns(c.Report, UsageReport)
    def report(self, since: float, until: float, *, by: str = "user") -> c.Request:
        """The usage report over [since, until) (Unix seconds), one row per user,
        submitter, tag, node or day: GPU-hours, jobs by outcome, waits, preemptions."""
        return c.Report(since=since, until=until, by=by)

    @reads(_wait_result)
    def wait(self, ids: int | Sequence[int], timeout: float | None = None) -> c.Request:
        """Block until the jobs end (or `timeout` seconds pass: exit_code 2)."""
        return c.Wait(ids=_ids(ids), timeout=timeout)

    @returns(c.Cancel, list[Job])
    def cancel(self, ids: int | Sequence[int], *, array: bool = False) -> c.Request:
        return c.Cancel(ids=_ids(ids), array=array)

    @returns(c.Release, list[Job])
    def release(self, ids: int | Sequence[int]) -> c.Request:
        """Run held jobs without the prerequisites that ended badly."""
        return c.Release(ids=_ids(ids))

    @returns(c.Note, Job)
    def note(
        self, id: int, text: str | None = None, *, append: str | None = None, clear: bool = False
    ) -> c.Request:
        return c.Note(id=id, text=text, append=append, clear=clear)

    @reads(_data)
    def result(self, id: int, *, set_json: str | None = None) -> c.Request:
        """The job's result.json payload; `set_json` stores this JSON text instead."""
        return c.Result(id=id, set_json=set_json)

    @returns(c.Requeue, list[c.Requeued])
    def requeue(
        self, ids: int | Sequence[int], *, artifacts: str | None = None, command: str | None = None
    ) -> c.Request:
        return c.Requeue(ids=_ids(ids), artifacts=artifacts, command=command)

    @returns(c.Purge, c.Purged)
    def purge(
        self,
        *,
        before: float | None = None,
        dry_run: bool = False,
        ids: Sequence[int] | None = None,
    ) -> c.Request:
        """Forget finished jobs (that ended before `before`, a Unix time; only `ids`,
        if given). `dry_run`: forget nothing, and say which jobs it would."""
        return c.Purge(before=before, dry_run=dry_run, ids=None if ids is None else list(ids))

    @returns(c.EditJob, Job)
    def edit_job(self, id: int, changes: dict[str, Any]) -> c.Request:
        """Change what a job asks for: JobSpec field → new value (a running job: only
        its name, note, tags and priority)."""
        return c.EditJob(id=id, changes=changes)

    @returns(c.Edit, Job)
    def edit(
        self, id: int, *, drop_after: Sequence[int] = (), add_after: Sequence[int] = ()
    ) -> c.Request:
        return c.Edit(id=id, drop_after=list(drop_after), add_after=list(add_after))

    @returns(c.Priority, list[Job])
    def priority(
        self,
        ids: int | Sequence[int],
        change: str | None = None,
        *,
        up: int | None = None,
        array: bool = False,
    ) -> c.Request:
        """`change` "5" sets, "+1"/"-2" adjust; or move `up` places (negative: down)."""
        return c.Priority(ids=_ids(ids), change=change, up=up, array=array)

    @returns(c.Pause, list[Job])
    def pause(self, ids: int | Sequence[int], *, array: bool = False) -> c.Request:
        return c.Pause(ids=_ids(ids), array=array)

    @returns(c.Resume, list[Job])
    def resume(self, ids: int | Sequence[int], *, array: bool = False) -> c.Request:
        return c.Resume(ids=_ids(ids), array=array)

    @returns(c.Move, c.Moved)
    def move(self, id: int, to: str) -> c.Request:
        return c.Move(id=id, to=to)

    @returns(c.JobArtifacts, c.Artifacts)
    def artifacts(self, id: int) -> c.Request:
        return c.JobArtifacts(id=id)

    # ------------------------------------------------------------ the queue

    @returns(c.Status, c.QueueStatus)
    def status(self) -> c.Request:
        return c.Status()

    @returns(c.Nodes, list[NodeView])
    def nodes(self, *, procs: bool = False, include_ignored: bool = False) -> c.Request:
        return c.Nodes(procs=procs, include_ignored=include_ignored)

    @returns(c.NodeFlag, NodeView)
    def node_flag(self, node: str, flag: Literal["drained", "ignored"], value: bool) -> c.Request:
        """Drain (or ignore) a node, or undo it."""
        return c.NodeFlag(node=node, flag=flag, value=value)

    @returns(c.Bootstrap, c.Bootstrapped)
    def bootstrap(self, node: str, *, force: bool = False) -> c.Request:
        return c.Bootstrap(node=node, force=force)

    @returns(c.GpuHistory, list[c.GpuPoint])
    def gpu_history(
        self, *, since: float | None = None, node: str | None = None, step: float = 60.0
    ) -> c.Request:
        """Each card's memory split and utilisation over time (one point a minute, 7
        days kept), averaged over `step` seconds, from `since` (default: 24 hours ago)."""
        return c.GpuHistory(since=since, node=node, step=step)

    @returns(c.ClusterStatus, list[c.ClusterView])
    def clusters(self, name: str | None = None) -> c.Request:
        """Slurm clusters and their pilots (one cluster with `name`)."""
        return c.ClusterStatus(name=name)

    @returns(c.ClusterScale, c.ClusterView)
    def cluster_scale(self, name: str, pilots: int | None) -> c.Request:
        """Keep exactly `pilots` pilots; None: back to automatic scaling."""
        return c.ClusterScale(name=name, pilots=pilots)

    @returns(c.ClusterDrain, c.ClusterView)
    def cluster_drain(self, name: str) -> c.Request:
        """Request no pilots and release each one once idle."""
        return c.ClusterDrain(name=name)

    @returns(c.ClusterRetry, c.ClusterView)
    def cluster_retry(self, name: str) -> c.Request:
        """Request pilots again after Slurm refused one."""
        return c.ClusterRetry(name=name)

    @returns(c.Events, list[Event])
    def events(
        self, since: int = 0, *, limit: int | None = None, job: int | None = None
    ) -> c.Request:
        """The event log after event id `since`."""
        return c.Events(since=since, limit=limit, job_id=job)

    @returns(c.Alerts, list[c.Alert])
    def alerts(self, *, include_acked: bool = False) -> c.Request:
        return c.Alerts(include_acked=include_acked)

    @returns(c.Ack, list[c.Alert])
    def ack(self, ids: Sequence[int] | None = None) -> c.Request:
        """Acknowledge these alerts (None: every open one)."""
        return c.Ack(ids=None if ids is None else list(ids))

    @returns(c.Pull, c.Pulled)
    def pull(self, id: int, paths: Sequence[str] = ()) -> c.Request:
        """Copy job `id`'s working directory (or `paths` in it) and artifacts into a
        staging directory on the queue host (`Pulled.path`), to be moved by the caller."""
        return c.Pull(id=id, paths=list(paths))

    @returns(c.Gc, c.GcDone)
    def gc(self) -> c.Request:
        """Free the queue host's snapshot blobs that no job in the queue references."""
        return c.Gc()

    @returns(c.Backup, c.BackupMade)
    def backup(self, path: str | None = None) -> c.Request:
        """A snapshot of queue.db at `path` (absolute, on the queue host)."""
        return c.Backup(path=path)

    @returns(c.Check, c.StoreCheck)
    def check(self, *, wait: float = 10.0) -> c.Request:
        """queue.db's integrity and the job ids nodes know that it does not."""
        return c.Check(wait=wait)

    @returns(c.Lanes, list[c.LaneStatus])
    def lanes(self) -> c.Request:
        return c.Lanes()

    @returns(c.Lane, c.LaneDetail)
    def lane(
        self,
        lane: str,
        action: str | None = None,
        ids: Sequence[int] = (),
        *,
        to: str | None = None,
        before: int | None = None,
        at: str | None = None,
    ) -> c.Request:
        """One lane in running order; an `action` (move, swap, skip, assign, pause,
        resume) changes it first."""
        return c.Lane(lane=lane, action=action, ids=list(ids), to=to, before=before, at=at)

    @returns(c.BusyMode, c.BusyView)
    def busy(self, node: str, mode: str | None = None) -> c.Request:
        """Whether a node counts as busy; `mode` on, off or auto sets it."""
        return c.BusyMode(node=node, mode=mode)

    @returns(c.BusyAssign, c.BusyAssignment)
    def busy_assign(self, *, forbid: bool) -> c.Request:
        return c.BusyAssign(forbid=forbid)

    # ------------------------------------------------------------ reservations

    @returns(c.ReserveAdd, CardReservation)
    def reserve_add(
        self,
        name: str,
        cards: Sequence[str],
        start: float,
        end: float,
        *,
        users: Sequence[str] = (),
        note: str = "",
    ) -> c.Request:
        """Set `cards` ("node:index") aside for `users` (none: anyone) over [start, end)."""
        return c.ReserveAdd(
            name=name, cards=list(cards), start=start, end=end, users=list(users), note=note
        )

    @returns(c.ReserveList, list[CardReservation])
    def reservations(self) -> c.Request:
        return c.ReserveList()

    @returns(c.ReserveRemove, CardReservation)
    def reserve_rm(self, name: str) -> c.Request:
        return c.ReserveRemove(name=name)

    # ------------------------------------------------------------ the daemon

    @returns(c.Ping, c.Pong)
    def ping(self) -> c.Request:
        return c.Ping()

    @returns(c.StopDaemon, c.DaemonStopping)
    def stop_daemon(self) -> c.Request:
        """Ask the daemon to exit; jobs (and their runners: it says how many) keep running."""
        return c.StopDaemon()

    @returns(c.Reload, c.Reloaded)
    def reload(self) -> c.Request:
        """Re-read config.toml: nodes added, removed (drained) or changed, limits, ..."""
        return c.Reload()

    @returns(c.NodeStatus, c.RunnerStatus)
    def node_status(self, node: str) -> c.Request:
        """Whether the node's runner is up: pid, version, uptime, jobs, journal, error."""
        return c.NodeStatus(node=node)

    @returns(c.NodeRestart, c.RunnerStatus)
    def node_restart(self, node: str) -> c.Request:
        """Restart the node's runner; its jobs run on and the new runner adopts them."""
        return c.NodeRestart(node=node)

    @returns(c.ImagePush, c.ImagesPushed)
    def image_push(
        self, image: str, image_manifest: str, *, image_id: str = "", size: int = 0,
        nodes: Sequence[str] = (),
    ) -> c.Request:
        """Stage an image, saved into the queue's blob store, on nodes (all: none named)."""
        return c.ImagePush(image=image, image_manifest=image_manifest, image_id=image_id,
                           size=size, nodes=list(nodes))

    @returns(c.ImageList, list[c.NodeCache])
    def image_list(self) -> c.Request:
        """Each node's runtime store, as its runner lists it now."""
        return c.ImageList()

    @returns(c.NodeStop, c.NodesStopped)
    def node_stop(
        self, node: str | None = None, *, all: bool = False, kill_jobs: bool = False
    ) -> c.Request:
        return c.NodeStop(node=node, all=all, kill_jobs=kill_jobs)


class Blocking(Requests):
    """`Requests` as blocking calls over `request` (the client's transport)."""

    def request(self, request: c.Request) -> c.Done:
        raise NotImplementedError

    def _bind(self, call: Call[P, T]) -> Callable[P, T]:
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return call.read(self.request(call.build(self, *args, **kwargs)))

        return method


class Awaiting(Requests):
    """`Requests` as coroutines over `request` (the client's transport)."""

    async def request(self, request: c.Request) -> c.Done:
        raise NotImplementedError

    def _bind(self, call: Call[P, T]) -> Callable[P, Awaitable[T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return call.read(await self.request(call.build(self, *args, **kwargs)))

        return method
