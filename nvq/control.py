"""The CLI ⇄ daemon protocol on `$NVQ_HOME/daemon.sock`.

The CLI sends one request frame (a tagged msgspec struct, msgpack, the same framing as
the runner protocol) and reads reply frames until a `Done`. Streaming commands (`job
logs -f`) send `Chunk`s before it. Errors are a `Done` with `error` set: one line the
CLI prints as it is.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from nvq.domain.attempts import Attempt
from nvq.domain.waiting import NodeFit
from nvq.model import Event, Job, JobSpec, NodeView


class Submit(msgspec.Struct, tag="submit", frozen=True):
    spec: JobSpec


class ListJobs(msgspec.Struct, tag="ls", frozen=True):
    active: bool = False
    states: list[str] | None = None
    limit: int | None = None
    array: int | None = None  # members of this array only


class ShowJob(msgspec.Struct, tag="show", frozen=True):
    id: int
    logs: int = 0


class Cancel(msgspec.Struct, tag="cancel", frozen=True):
    ids: list[int]
    array: bool = False  # ids are array ids: every member not yet running


class Release(msgspec.Struct, tag="release", frozen=True):
    ids: list[int]


class Note(msgspec.Struct, tag="note", frozen=True):
    id: int
    text: str | None = None
    append: str | None = None
    clear: bool = False


class Result(msgspec.Struct, tag="result", frozen=True):
    id: int
    set_json: str | None = None


class Wait(msgspec.Struct, tag="wait", frozen=True):
    ids: list[int]
    timeout: float | None = None


class Logs(msgspec.Struct, tag="logs", frozen=True):
    id: int
    lines: int = 50
    follow: bool = False
    stream: Literal["stdout", "stderr", "setup"] = "stdout"
    attempt: int | None = None  # that attempt's log (None: the latest)


class Status(msgspec.Struct, tag="status", frozen=True):
    pass


class Nodes(msgspec.Struct, tag="nodes", frozen=True):
    procs: bool = False
    include_ignored: bool = False


class NodeFlag(msgspec.Struct, tag="node_flag", frozen=True):
    node: str
    flag: Literal["drained", "ignored"]
    value: bool


class Bootstrap(msgspec.Struct, tag="bootstrap", frozen=True):
    node: str
    force: bool = False


class Events(msgspec.Struct, tag="events", frozen=True):
    since: int = 0
    limit: int | None = None
    job_id: int | None = None


class Subscribe(msgspec.Struct, tag="subscribe", frozen=True):
    """The live event stream: every event with id > `since` (-1: only events from now
    on), then each new one as it is committed, until the client hangs up. Each `Chunk`
    holds a msgpack `list[Event]` (one commit, or a page of the backlog). A reader that
    falls too far behind gets a final `Done` with an error and `data` =
    `{"fell_behind": <last id sent>}`: subscribe again from there."""

    since: int = 0
    job_id: int | None = None  # only this job's events


class Why(msgspec.Struct, tag="why", frozen=True):
    """Per node, whether the job could start there now and which constraint fails."""

    id: int


class StopDaemon(msgspec.Struct, tag="stop", frozen=True):
    pass


class Ping(msgspec.Struct, tag="ping", frozen=True):
    pass


# -- scheduling policy --------------------------------------------------------------


class Requeue(msgspec.Struct, tag="requeue", frozen=True):
    ids: list[int]


class Purge(msgspec.Struct, tag="purge", frozen=True):
    before: float | None = None
    dry_run: bool = False  # only say which jobs it would forget
    ids: list[int] | None = None  # at most these (the ones a user confirmed)


class Edit(msgspec.Struct, tag="edit", frozen=True):
    id: int
    drop_after: list[int] = []
    add_after: list[int] = []


class EditJob(msgspec.Struct, tag="edit_job", frozen=True):
    """`job edit ID --vram ...`: JobSpec field → its new value, checked as at submit."""

    id: int
    changes: dict[str, Any]


class Priority(msgspec.Struct, tag="priority", frozen=True):
    ids: list[int]
    change: str | None = None  # "5" sets, "+1"/"-2" adjust
    up: int | None = None  # places earlier in the dispatch order (negative: later)
    array: bool = False


class Pause(msgspec.Struct, tag="pause", frozen=True):
    ids: list[int]
    array: bool = False


class Resume(msgspec.Struct, tag="resume", frozen=True):
    ids: list[int]
    array: bool = False


class Lanes(msgspec.Struct, tag="lanes", frozen=True):
    pass


class Lane(msgspec.Struct, tag="lane", frozen=True):
    lane: str
    action: str | None = None  # None: show it
    ids: list[int] = []
    to: str | None = None
    before: int | None = None
    at: str | None = None


class Alerts(msgspec.Struct, tag="alerts", frozen=True):
    include_acked: bool = False


class Ack(msgspec.Struct, tag="ack", frozen=True):
    ids: list[int] | None = None  # None: every open alert


class Backup(msgspec.Struct, tag="backup", frozen=True):
    path: str | None = None  # absolute, on the queue host; None: the backup directory


class Check(msgspec.Struct, tag="check", frozen=True):
    """queue.db's integrity, and whether it knows what the nodes' journals know."""

    wait: float = 10.0  # seconds to wait for connecting nodes to report


class Pull(msgspec.Struct, tag="pull", frozen=True):
    """Copy a job's working directory (or `paths` in it) and its artifacts from its
    node into a staging directory on the queue host (`Pulled.path`)."""

    id: int
    paths: list[str] = []


class Gc(msgspec.Struct, tag="gc", frozen=True):
    """Free the blob store's objects that no job (not yet purged) references."""


# -- machines that come and go ---------------------------------------------------------


class JobArtifacts(msgspec.Struct, tag="job_artifacts", frozen=True):
    id: int


class BusyMode(msgspec.Struct, tag="busy_mode", frozen=True):
    node: str
    mode: str | None = None  # "on" | "off" | "auto"; None: show it


class BusyAssign(msgspec.Struct, tag="busy_assign", frozen=True):
    forbid: bool  # for the asking user's own busy nodes


class GpuHistory(msgspec.Struct, tag="gpu_history", frozen=True):
    """Each card's history (one point a minute, 7 days kept), averaged over `step`
    seconds, from `since` (a Unix time; None: the last 24 hours)."""

    since: float | None = None
    node: str | None = None
    step: float = 60.0


class ClusterStatus(msgspec.Struct, tag="cluster_status", frozen=True):
    name: str | None = None  # None: every cluster


class ClusterScale(msgspec.Struct, tag="cluster_scale", frozen=True):
    name: str
    pilots: int | None  # keep exactly this many; None: back to automatic scaling


class ClusterDrain(msgspec.Struct, tag="cluster_drain", frozen=True):
    name: str


class ClusterRetry(msgspec.Struct, tag="cluster_retry", frozen=True):
    name: str


Request = (
    Submit
    | GpuHistory
    | JobArtifacts
    | BusyMode
    | BusyAssign
    | Alerts
    | Ack
    | Backup
    | Check
    | ListJobs
    | ShowJob
    | Cancel
    | Release
    | Note
    | Result
    | Wait
    | Logs
    | Status
    | Nodes
    | NodeFlag
    | Bootstrap
    | Events
    | Subscribe
    | Why
    | StopDaemon
    | Ping
    | Requeue
    | Purge
    | Edit
    | Priority
    | Pause
    | Resume
    | Lanes
    | Lane
    | ClusterStatus
    | ClusterScale
    | ClusterDrain
    | ClusterRetry
    | EditJob
    | Gc
    | Pull
)


class Chunk(msgspec.Struct, tag="chunk", frozen=True):
    data: bytes


class Done(msgspec.Struct, tag="done", frozen=True):
    data: Any = None
    error: str | None = None
    exit_code: int = 0  # what the CLI should exit with (wait: 0, 1 or 2)


Reply = Chunk | Done


# -- what `Done.data` holds, typed ---------------------------------------------------
# Fields are declared in the order the daemon writes them and a key it only sometimes
# sends is UNSET when absent, so a decoded reply encodes back to the very document the
# daemon sent: `--json` prints it as it came.

Unset = msgspec.UnsetType
UNSET = msgspec.UNSET


class JobDetail(Job, kw_only=True):
    """`ShowJob`: the job, its events, its attempts, and why it waits."""

    events: list[Event] = msgspec.field(default_factory=list)
    attempts: list[Attempt] = msgspec.field(default_factory=list)
    why: str | None = None
    logs: str | Unset | None = UNSET  # only when asked for (ShowJob.logs)
    # A waiting job's `reason` is its reason code (nvq.domain.waiting); this, the words.
    reason_detail: str | Unset | None = UNSET


class JobRow(Job, kw_only=True):
    """A job in `ListJobs`: a waiting (pending, held, paused) one carries its reason
    code in `reason` and the words in `reason_detail`."""

    reason_detail: str | Unset | None = UNSET


class WhyReport(msgspec.Struct, kw_only=True):
    """`Why`: the job's reason, then every node with each constraint checked."""

    id: int
    state: str
    reason: str | None
    reason_detail: str | None
    nodes: list[NodeFit]


class WaitResult(msgspec.Struct, kw_only=True):
    """`Wait`: the jobs as they ended (or stand), and 0 all completed, 1 one ended
    badly, 2 the timeout ran out first."""

    jobs: list[Job]
    exit_code: int


class Alert(msgspec.Struct, kw_only=True):
    id: int
    time: float
    kind: str
    severity: str
    job_id: int | None
    node: str | None
    attempt: int
    message: str
    detail: str | None
    acked_at: float | None
    acked_by: str | None


class DaemonInfo(msgspec.Struct, kw_only=True):
    pid: int
    version: str
    started_at: float
    home: str


class ChannelHealth(msgspec.Struct, kw_only=True):
    delivered: int
    waiting: int
    failing: bool
    last_error: str | None
    last_error_at: float | None
    attempts: int


class QueueStatus(msgspec.Struct, kw_only=True):
    daemon: DaemonInfo
    counts: dict[str, int]  # every state, in JobState order
    pending_reaps: int
    placement: dict[str, Any]  # figures of the last placement pass
    nodes: list[NodeView]
    jobs: list[Job]  # pending, held, paused and running
    alerts: list[Alert]  # the open ones
    notify: dict[str, ChannelHealth]
    last_backup_at: float | None
    keeper: dict[str, Any] | None  # None: no keeper installed
    disk_full: str | None = None  # set while queue.db cannot be written for space


class Pong(msgspec.Struct, kw_only=True):
    pid: int
    version: str


class Bootstrapped(msgspec.Struct, kw_only=True):
    node: str
    version: str
    python: str
    installed: bool  # False: it was already current
    seconds: float
    note: str | Unset = UNSET


class Purged(msgspec.Struct, kw_only=True):
    purged: int
    ids: list[int]


class Pulled(msgspec.Struct, kw_only=True):
    path: str  # the staging directory on the queue host, for the CLI to move
    node: str


class GcDone(msgspec.Struct, kw_only=True):
    """`Gc`: what left the blob store and what it still holds."""

    objects_freed: int
    bytes_freed: int
    objects_kept: int
    bytes_kept: int


class BackupMade(msgspec.Struct, kw_only=True):
    path: str
    bytes: int
    jobs: int
    seconds: float
    at: float
    deleted: list[str] | Unset = UNSET  # periodic backups only: rotated out


class NodeCheck(msgspec.Struct, kw_only=True):
    """One node's journal against queue.db (`Check`)."""

    missing: list[int]  # job ids the node knows and queue.db does not
    state: str  # the node's state: a node that is not up could not be compared
    journal_head: int | None  # the runner's last journaled seq when it said hello
    applied_seq: int  # the last seq of it queue.db applied
    lost_events: int  # journaled events before the hello that queue.db never applied


class StoreCheck(msgspec.Struct, kw_only=True):
    integrity: str  # "ok", or what `PRAGMA integrity_check` found
    nodes: dict[str, NodeCheck]


class LaneStatus(msgspec.Struct, kw_only=True):
    lane: str
    node: str
    gpu: int
    running: int | None
    next: list[int]
    paused: bool
    blocked: str | None


class LaneDetail(LaneStatus, kw_only=True):
    running_job: Job | None
    # each a job document with its 1-based `position` first
    jobs: list[dict[str, Any]]


class ArtifactFile(msgspec.Struct, kw_only=True):
    path: str
    size: int
    mtime: float


class Artifacts(msgspec.Struct, kw_only=True):
    job_id: int
    dir: str
    files: list[ArtifactFile]
    bytes: int
    last_sync: float | None
    copied_to: str | Unset = UNSET  # set by `job artifacts --get`, never by the daemon


class BusyView(msgspec.Struct, kw_only=True):
    node: str
    owner: str | None
    mode: str  # on | off | auto
    reported: bool | None  # the runner's last word; None: none yet
    busy: bool
    sessions: Any = UNSET  # the runner's detail, once it reported
    idle: Any = UNSET


class BusyAssignment(msgspec.Struct, kw_only=True):
    user: str
    busy_assign: bool


# A subscription's chunk: the events of one commit (or a page of the backlog).
event_batch_decoder = msgspec.msgpack.Decoder(list[Event])


class GpuPoint(msgspec.Struct, kw_only=True):
    """One card at one time: its memory split (foreign: not the queue's; reserved:
    what queue jobs asked for) and utilisation, averaged over the step."""

    time: float
    node: str
    gpu: int
    mem_total_mb: int
    foreign_mb: int
    queue_mb: int
    reserved_mb: int
    util_percent: int | None


class ClusterPilot(msgspec.Struct, kw_only=True):
    node: str  # hpc/81234
    job_id: str
    state: str  # Slurm's: PENDING, RUNNING, ...
    reason: str | None  # why Slurm holds it back
    time_left: float | None  # seconds its allocation has left
    host: str | None  # the compute node, once it runs


class ClusterView(msgspec.Struct, kw_only=True):
    name: str
    login: str  # host:port of the login node
    connected: bool
    error: str | None  # why the login node cannot be reached
    target: int | None  # `cluster scale N` (0 after `drain`); None: automatic
    refused: str | None  # Slurm's refusal, while no more pilots are requested
    demand: int  # pilots the waiting jobs would fill
    pilots: list[ClusterPilot]


request_decoder = msgspec.msgpack.Decoder(Request)
reply_decoder = msgspec.msgpack.Decoder(Reply)
encoder = msgspec.msgpack.Encoder()


class ArraySubmitted(msgspec.Struct, kw_only=True):
    """`job submit --array`: the array (its id is its first member's) and its members."""

    id: int
    ids: list[int]
    count: int
