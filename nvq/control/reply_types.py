"""Which reply answers each request: one table, named once. The daemon's handlers
return it (their annotations are held to it by a test), the client decodes `Done.data`
into it, and `nvq schema` prints its JSON Schema. `Logs` and `Subscribe` stream
chunks instead, and `Shell`, `Exec` and `Forward` open a terminal session: they are
not here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nvq.config.types import SubmitConfig
from nvq.control import cluster_replies as cr
from nvq.control import replies as r
from nvq.control import requests as q
from nvq.control import state_requests as qs
from nvq.control.progress import ProgressLine, ProgressLines
from nvq.domain.report import UsageReport
from nvq.domain.reservations import CardReservation
from nvq.model import Alert, Event, Job, NodeView

T = TypeVar("T")

# A job's result.json payload: any JSON value the job wrote (None: none yet).
JsonValue = Any

REPLIES: dict[type[q.Request], Any] = {
    q.Ping: r.Pong,
    q.Submit: r.Submitted,
    q.SubmitDry: r.SubmitPreview,
    q.SubmitFromJob: JsonValue,  # Submitted, ArraySubmitted or SubmitPreview
    q.Clone: r.Submitted,
    q.ListJobs: list[r.JobRow],
    q.JobWindow: r.JobPage,
    q.ShowJob: r.JobDetail,
    q.Why: r.WhyReport,
    q.Report: UsageReport,
    q.Wait: list[Job],
    qs.Cancel: list[Job],
    qs.Release: list[Job],
    q.Note: Job,
    q.Result: JsonValue,
    q.Requeue: list[r.Requeued],
    q.Purge: r.Purged,
    q.EditJob: Job,
    q.Edit: Job,
    q.Priority: list[Job],
    qs.Pause: list[Job],
    qs.Resume: list[Job],
    q.Move: r.Moved,
    q.JobArtifacts: r.Artifacts,
    q.Status: r.QueueStatus,
    q.Nodes: list[NodeView],
    q.NodeFlag: NodeView,
    q.Bootstrap: r.Bootstrapped,
    q.NodeStop: r.NodesStopped,
    q.NodeStatus: r.RunnerStatus,
    q.NodeRestart: r.RunnerStatus,
    q.ImagePush: r.ImagesPushed,
    q.ImageList: list[r.NodeCache],
    q.GpuHistory: list[r.GpuPoint],
    q.ClusterStatus: list[cr.ClusterView],
    q.ClusterScale: cr.ClusterView,
    q.ClusterDrain: cr.ClusterView,
    q.ClusterRetry: cr.ClusterRetried,
    q.Events: list[Event],
    q.Alerts: list[Alert],
    q.Ack: list[Alert],
    q.Pull: r.Pulled,
    q.Gc: r.GcDone,
    q.SubmitSettings: SubmitConfig,
    q.Backup: r.BackupMade,
    q.Check: r.StoreCheck,
    q.Lanes: list[r.LaneStatus],
    ProgressLines: list[ProgressLine],
    q.Lane: r.LaneDetail,
    q.BusyMode: r.BusyView,
    q.BusyAssign: r.BusyAssignment,
    q.StopDaemon: r.DaemonStopping,
    q.ReserveAdd: CardReservation,
    q.ReserveList: list[CardReservation],
    q.ReserveRemove: CardReservation,
    q.Reload: r.Reloaded,
}


@dataclass(frozen=True, slots=True)
class Coded(Generic[T]):
    """A reply with the exit code the CLI should end with, for the requests whose
    answer is also a verdict (`Wait`: 0 all completed, 1 one ended badly, 2 timed out;
    `Check`: 1 when something is wrong; `Alerts`: 1 while any is open). Every other handler returns its reply bare
    (exit 0). Not on the wire: the control server puts the code in `Done`."""

    reply: T
    exit_code: int


__all__ = ["REPLIES", "Coded", "JsonValue"]
