"""What `Done.data` holds, typed: the daemon's answers as the client decodes them."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.domain.attempts import Attempt
from nvq.domain.start_estimate import StartEstimate
from nvq.domain.waiting import NodeFit
from nvq.model import Alert, Event, Job, NodeView  # Alert: `Alerts`/`Ack` send store rows
from nvq_runner.protocol import CachedImage

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
    # the most GPU memory its latest measured attempt held on one card (MiB)
    peak_vram_mb: int | None = None
    why: str | None = None
    logs: str | Unset | None = UNSET  # only when asked for (ShowJob.logs)
    # A waiting job's `reason` is its reason code (nvq.domain.waiting); this, the words.
    reason_detail: str | Unset | None = UNSET
    # Chunked artifact syncs (only for a job that has had one): what each described,
    # what crossed, and how an attempt got its previous artifacts.
    artifact_syncs: list[ArtifactSync] | Unset = UNSET
    artifact_notes: list[str] | Unset = UNSET
    reassign_at: float | Unset = UNSET  # running, node out of reach: when it may move


class ArtifactSync(msgspec.Struct, kw_only=True):
    """One sync of a job's $NVQ_ARTIFACTS into the blob store. `bytes`: what the tree
    describes; `sent`: what crossed from the node; `fetched`: what the attempt had
    pulled from the queue host by then (on demand when `mode` is "mounted")."""

    time: float
    attempt: int
    node: str
    files: int
    bytes: int
    sent: int
    dedup_ratio: float
    fetched: int
    mode: str


class JobRow(Job, kw_only=True):
    """A job in `ListJobs`: a waiting one has its reason code, and `reason_detail`."""

    reason_detail: str | Unset | None = UNSET
    # A pending job's estimated start (`job ls` only; nvq.domain.start_estimate).
    start_estimate: StartEstimate | Unset = UNSET


class Moved(Job, kw_only=True):
    """`Move`: the job as it now stands; `stopped` names the attempt that was running
    (stopped, so that the job runs at its new place as a new attempt)."""

    to: str = ""  # where it is pinned: a node, or a card's lane NODE:GPU
    stopped: str | None = None  # "attempt 2 on box406", or None for a waiting job


class Requeued(Job, kw_only=True):
    """`Requeue`: the job back in line, and which artifacts its next attempt starts
    from: `keep` (the last checkpoint) or `fresh` (none; the stored copy, if any, is
    set aside in `artifacts_kept`)."""

    artifacts: str = "keep"
    artifacts_kept: str | None = None


class NodeLeft(msgspec.Struct, kw_only=True):
    node: str
    reason: str  # why its runner was left running


class NodesStopped(msgspec.Struct, kw_only=True):
    """`NodeStop`: the nodes whose runner was stopped, and those left running."""

    stopped: list[str]
    left: list[NodeLeft]


class ImageOnNode(msgspec.Struct, kw_only=True):
    """One node's part of `ImagePush`: `loaded` when the image went into its store,
    neither loaded nor `error` when the store had it already."""

    node: str
    loaded: bool = False
    fetched_bytes: int = 0  # came over the link (the node's blob cache lacked them)
    seconds: float = 0.0
    error: str | None = None


class ImagesPushed(msgspec.Struct, kw_only=True):
    """`ImagePush`: the image as the queue host saved it, and each node's outcome."""

    image: str
    image_id: str
    size: int
    nodes: list[ImageOnNode]


class NodeCache(msgspec.Struct, kw_only=True):
    """`ImageList`, one per node: its runtime ("": none; null: not reported) and the
    images its runner listed in that runtime's store (null: it could not say)."""

    node: str
    runtime: str | None
    images: list[CachedImage] | None


class DaemonStopping(msgspec.Struct, kw_only=True):
    """`StopDaemon`: the runners it leaves running (by design: their jobs go on)."""

    stopping: bool
    runners_left: int = 0
    jobs_running: int = 0


class Reloaded(msgspec.Struct, kw_only=True):
    """`Reload`: what config.toml changed, and what needs a restart (kept as it was)."""

    applied: list[str]
    refused: list[str]


class Submitted(Job, kw_only=True):
    """`Submit`: the job; `unreported` names the nodes that had not reported their
    cards, so whether any node could ever run it was not checked yet (sent only then)."""

    unreported: list[str] | Unset = UNSET
    # its --vram against what the same command reached before (nvq.domain.vram_history):
    # below it, or what `--vram auto` resolved to; sent only then
    vram_note: str | Unset = UNSET


class RunnerStatus(msgspec.Struct, kw_only=True):
    """`NodeStatus`/`NodeRestart`: a node's runner as the daemon knows it. `runner_up`:
    connected and reporting now; the rest is from its last hello (pid, version, start
    time) and the daemon's own record (journal position applied, last error)."""

    node: str
    state: str  # as `queue nodes` shows it: up, down, connecting, draining, stopped...
    runner_up: bool
    pid: int | None = None
    version: str | None = None
    hostname: str | None = None
    started_at: float | None = None
    uptime_s: float | None = None
    jobs: list[int] = []  # running there now
    journal_id: str = ""
    journal_head: int | None = None  # the last event it had written when it said hello
    applied_seq: int = 0  # the last of its events the queue applied
    last_seen: float | None = None
    last_error: str | None = None


class SubmitPreview(msgspec.Struct, kw_only=True):
    """`Submit` with `dry_run`: the job passed every check a submit makes, and was
    not stored. `would_start`: it would start now on `node`, cards `gpus`; otherwise
    `reason`/`reason_detail` say why it would wait (the codes of `job ls`), and
    `nodes` is `job why`'s analysis, node by node. `count`: jobs it would insert (an
    array's members); `job`: the first, as it would be stored (id included)."""

    dry_run: bool = True
    would_start: bool = False
    node: str | None = None
    gpus: list[int] = []
    reason: str | None = None
    reason_detail: str | None = None
    count: int = 1
    unreported: list[str] = []
    nodes: list[NodeFit] = []
    job: Job
    vram_note: str | None = None  # as `Submitted.vram_note`


class WhyReport(msgspec.Struct, kw_only=True):
    """`Why`: the job's reason, then every node with each constraint checked."""

    id: int
    state: str
    reason: str | None
    reason_detail: str | None
    nodes: list[NodeFit]
    # A pending job's estimated start and what it rests on; None for other states.
    start_estimate: StartEstimate | None = None


class WaitResult(msgspec.Struct, kw_only=True):
    """`Wait`: the jobs as they ended (or stand), and 0 all completed, 1 one ended
    badly (even while others still run), 2 the timeout ran out first and none ended
    badly. `still_going`: the ids not finished yet."""

    jobs: list[Job]
    exit_code: int
    still_going: list[int] = []


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
    jobs: list[Job]  # pending, held, paused and running (array members: see arrays)
    alerts: list[Alert]  # the open ones
    notify: dict[str, ChannelHealth]
    last_backup_at: float | None
    keeper: dict[str, Any] | None  # None: no keeper installed
    disk_full: str | None = None  # set while queue.db cannot be written for space
    arrays: list[ArraySummary] = []  # arrays with live members, one line each
    config_changed: bool = False  # config.toml differs from what the daemon runs
    needs_restart: list[str] = []  # what the last reload left for a restart, one line each


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
    blobs: int = 0  # snapshot files carried for unfinished jobs
    blob_bytes: int = 0


class NodeCheck(msgspec.Struct, kw_only=True):
    """One node's journal against queue.db (`Check`)."""

    missing: list[int]  # job ids the node knows and queue.db does not
    state: str  # the node's state: a node that is not up could not be compared
    journal_head: int | None  # the runner's last journaled seq when it said hello
    applied_seq: int  # the last seq of it queue.db applied
    lost_events: int  # journaled events before the hello that queue.db never applied
    # job ids queue.db had forgotten and made again from the node's start records
    recovered: list[int] = []


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


class ArraySubmitted(msgspec.Struct, kw_only=True):
    """`job submit --array`: the array (its id is its first member's) and its members."""

    id: int
    ids: list[int]
    count: int


class JobPage(msgspec.Struct, kw_only=True):
    """`JobWindow`: the jobs in the window, by id, and whether it left any out."""

    jobs: list[JobRow]
    more: bool = False
    unreachable: dict[str, float] | Unset = UNSET  # node out of reach → its reassign_at


class ArraySummary(msgspec.Struct, kw_only=True):
    """An array in `queue status`, in place of its members: each state's count."""

    id: int
    name: str
    counts: dict[str, int]
