"""What the CLI (or any client) asks the daemon: one tagged msgspec struct per request,
sent as one msgpack frame on `$NVQ_HOME/daemon.sock`."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from nvq.control.progress import ProgressLines
from nvq.control.state_requests import Cancel, Pause, Release, Resume
from nvq.control.terminal import Exec, Forward, Shell
from nvq.model import JobSpec


class Submit(msgspec.Struct, tag="submit", frozen=True):
    spec: JobSpec


class SubmitDry(msgspec.Struct, tag="submit_dry_run", frozen=True):
    """`job submit --dry-run`: every check of `Submit`, then where the job would
    start now or why it would wait; nothing is stored."""

    spec: JobSpec


class ListJobs(msgspec.Struct, tag="ls", frozen=True):
    active: bool = False
    states: list[str] | None = None
    limit: int | None = None
    array: int | None = None  # members of this array only


class ShowJob(msgspec.Struct, tag="show", frozen=True):
    id: int
    logs: int = 0
    reveal: bool = False  # secret-looking values will be shown: its owner's and admins' only


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
    # "both": stdout and stderr interleaved as they were written (the queue host's copy)
    stream: Literal["stdout", "stderr", "setup", "both"] = "stdout"
    attempt: int | None = None  # that attempt's log (None: the latest)
    marks: bool = False  # each line starts with its stream (`out| `, `err| `)


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


class NodeStatus(msgspec.Struct, tag="node_status", frozen=True):
    """Whether `node`'s runner is up, and what it is: pid, version, uptime, jobs,
    journal position, last error."""

    node: str


class NodeRestart(msgspec.Struct, tag="node_restart", frozen=True):
    """Restart `node`'s runner; its jobs run on and the new runner adopts them."""

    node: str


class NodeStop(msgspec.Struct, tag="node_stop", frozen=True):
    """Stop the runner of `node` (or of every node with `all`) and keep it stopped (the
    node ignored) until it is un-ignored; a node with running jobs is left alone unless
    `kill_jobs`."""

    node: str | None = None
    all: bool = False
    kill_jobs: bool = False


class Events(msgspec.Struct, tag="events", frozen=True):
    since: int = 0
    limit: int | None = None
    job_id: int | None = None


class Subscribe(msgspec.Struct, tag="subscribe", frozen=True):
    """The live event stream: every event with id > `since` (-1: only events from now
    on), then each new one as it is committed, until the client hangs up. Each `Chunk`
    holds a msgpack `list[Event]` (with `detail`: `list[StreamEvent]`; one commit, or a
    page of the backlog). A reader that falls too far behind gets a final `Done` with
    an error and `data` = `{"fell_behind": <last id sent>}`: subscribe again from there."""

    since: int = 0
    job_id: int | None = None  # only this job's events
    # `queue events --follow` filters, applied in the daemon (each empty: no filter):
    jobs: tuple[int, ...] = ()  # only these jobs' events
    user: str | None = None  # only events of this user's jobs
    mine: bool = False  # only events of the asking user's jobs
    classes: tuple[str, ...] = ()  # only events answering to one of these words
    detail: bool = False  # send `StreamEvent`s (classes, and `end` on a job's end)


class Why(msgspec.Struct, tag="why", frozen=True):
    """Per node, whether the job could start there now and which constraint fails."""

    id: int


class Report(msgspec.Struct, tag="report", frozen=True):
    """The usage report over [since, until): rows by user, submitter, tag, node or day."""

    since: float
    until: float
    by: str = "user"


class StopDaemon(msgspec.Struct, tag="stop", frozen=True):
    # Planned: the daemon leaves the stop mark, so that no observer or keeper starts it
    # again (nvq/stopped_mark.py). A restore's stop is not: the keeper it paused starts
    # the daemon again on the restored queue.
    planned: bool = True


class Ping(msgspec.Struct, tag="ping", frozen=True):
    pass


class Reload(msgspec.Struct, tag="reload", frozen=True):
    """Re-read config.toml and apply what changed (`nvq daemon reload`, SIGHUP)."""


# -- scheduling policy --------------------------------------------------------------


class Requeue(msgspec.Struct, tag="requeue", frozen=True):
    ids: list[int]
    artifacts: str | None = None  # "keep" | "fresh"; None: fresh if completed, else keep
    command: str | None = None  # run this command instead (`requeue --edit`, one id)


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


class Move(msgspec.Struct, tag="move", frozen=True):
    """`job move ID NODE[:GPU]`: pin a waiting job there; stop a running one and run
    it there as a new attempt."""

    id: int
    to: str  # "node" (prefix) or "node:gpu" (that card's lane)


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


class JobWindow(msgspec.Struct, tag="ls_window", frozen=True, kw_only=True):
    """`job ls`: the live jobs and the newest `finished` finished ones (with `limit`:
    the newest `limit` jobs of any state; with `all`: every one), narrowed by the
    filters; `active`: the live ones only (pending, held, paused, running). The reply
    is a `JobPage`."""

    states: list[str] | None = None
    active: bool = False
    user: str | None = None
    mine: bool = False  # the asking user's jobs (the daemon knows who asks)
    tag: str | None = None
    array: int | None = None
    since_id: int | None = None
    since_time: float | None = None
    limit: int | None = None
    all: bool = False
    finished: int = 50


class ReserveAdd(msgspec.Struct, tag="reserve_add", frozen=True):
    """Set cards ("node:index") aside for `users` ([]: anyone) over [start, end)."""

    name: str
    cards: list[str]  # [] with `gpus`: the daemon picks that many on `nodes`
    start: float
    end: float
    users: list[str] = []
    note: str = ""
    gpus: int = 0
    nodes: list[str] = []  # node name prefixes; []: any node


class ReserveList(msgspec.Struct, tag="reserve_ls", frozen=True):
    pass


class ReserveRemove(msgspec.Struct, tag="reserve_rm", frozen=True):
    name: str


class Clone(msgspec.Struct, tag="clone", frozen=True):
    """`job clone ID` (gflow's `gjob redo`): a new job asking for what job `id` asked
    for, its command, world and snapshot; job `id` is left as it is."""

    id: int


# Only a running job's own `nvq` sends this (over its `$NVQ_SOCKET`,
# nvq_runner/job_cli.py).


class SubmitFromJob(msgspec.Struct, tag="submit_from_job", frozen=True):
    """`nvq job submit ARGV` typed inside job `id` (over its `$NVQ_SOCKET`): the queue
    parses `argv` with the CLI's own parser (nvq.cli.submit_argv). `cwd`: where it was
    typed, on the job's node; `subdir`: the same place inside the job's working copy
    ("" its top; None: outside it). Answered with the document `job submit --json`
    prints: the job, the array, or (--dry-run) the preview."""

    argv: list[str]
    id: int  # the calling job (its owner's rights: the permission table's `owner`)
    cwd: str
    subdir: str | None = None


# A client who cannot touch the queue's home (a member of a shared queue) submits with
# a snapshot as the owner does: the `[submit]` settings, and a connection that takes
# the snapshot's blobs the queue lacks into the daemon's store (nvq.world.blobsync's
# exchange, on the socket after one `Done`).


class SubmitSettings(msgspec.Struct, tag="submit_settings", frozen=True):
    """The queue's `[submit]` section (`SubmitConfig`): what a submit takes with a job."""


class ReceiveSnapshot(msgspec.Struct, tag="receive_snapshot", frozen=True):
    """Store a snapshot's blobs: answered with one `Done`; then, when it holds no error,
    the connection carries the blob exchange (nvq.world.blobsync) until its receipt."""


# Container images on the nodes (`nvq image push|ls`).


class ImagePush(msgspec.Struct, tag="image_push", frozen=True):
    """Stage image `image` on `nodes` (every node when empty) ahead of its jobs, from
    the archive the client saved into the queue's blob store (`image_manifest`,
    nvq/world/images.py); a node whose runtime has it already fetches nothing."""

    image: str
    image_manifest: str
    image_id: str = ""
    size: int = 0  # the archive's bytes
    nodes: list[str] = []


class ImageList(msgspec.Struct, tag="image_list", frozen=True):
    """Each node's runtime store, as its runner lists it now."""


Request = (
    Submit
    | SubmitFromJob
    | Clone
    | ReserveAdd
    | ReserveList
    | ReserveRemove
    | SubmitDry
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
    | Report
    | StopDaemon
    | Ping
    | Reload
    | Requeue
    | Purge
    | Edit
    | Priority
    | Pause
    | Resume
    | Lanes
    | Lane
    | ProgressLines
    | ClusterStatus
    | ClusterScale
    | ClusterDrain
    | ClusterRetry
    | EditJob
    | Gc
    | Pull
    | JobWindow
    | Move
    | NodeStop
    | NodeStatus
    | NodeRestart
    | ImagePush
    | ImageList
    | SubmitSettings
    | ReceiveSnapshot
    | Shell
    | Exec
    | Forward
)
