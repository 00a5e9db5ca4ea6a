"""The clients' requests about the queue as a whole: status, nodes, clusters, events,
alerts, lanes, busy owners, reservations, backups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from nvq import control as c
from nvq.client.calls import Requesting, returns
from nvq.config.types import SubmitConfig
from nvq.domain.reservations import CardReservation
from nvq.model import Event, NodeView


class QueueRequests(Requesting):
    """Requests about the queue (`nvq queue …`, `nvq node …`, `nvq cluster …`)."""

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

    @returns(c.ClusterRetry, c.ClusterRetried)
    def cluster_retry(self, name: str) -> c.Request:
        """Read the cluster's table again and request pilots again after a refusal."""
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

    @returns(c.SubmitSettings, SubmitConfig)
    def submit_settings(self) -> c.Request:
        """The queue's `[submit]` settings (a member cannot read the owner's config)."""
        return c.SubmitSettings()

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

    @returns(c.ProgressLines, list[c.ProgressLine])
    def progress_lines(self) -> c.Request:
        """Each running job's progress line (those whose output you may read)."""
        return c.ProgressLines()

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
        gpus: int = 0,
        nodes: Sequence[str] = (),
    ) -> c.Request:
        """Set `cards` ("node:index") aside for `users` (none: anyone) over [start, end);
        or, with no cards, `gpus` free ones on `nodes` (name prefixes; none: any)."""
        return c.ReserveAdd(
            name=name,
            cards=list(cards),
            start=start,
            end=end,
            users=list(users),
            note=note,
            gpus=gpus,
            nodes=list(nodes),
        )

    @returns(c.ReserveList, list[CardReservation])
    def reservations(self) -> c.Request:
        return c.ReserveList()

    @returns(c.ReserveRemove, CardReservation)
    def reserve_rm(self, name: str) -> c.Request:
        return c.ReserveRemove(name=name)
