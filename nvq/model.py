"""The queue's data, as msgspec structs shared by the daemon, the store and the CLI.

Times are Unix seconds (float, UTC). Memory is MiB (int). These structs are also the
`--json` documents the CLI prints, so their field names are part of the interface;
`JobRecord` is the one the daemon keeps to itself (shown as the flat `Job`).
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from nvq_runner.protocol import CachedImage


class JobState(enum.StrEnum):
    PENDING = "pending"
    HELD = "held"
    PAUSED = "paused"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    LOST = "lost"

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATES


FINISHED_STATES = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT, JobState.CANCELLED, JobState.LOST}
)
ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING})


class JobSpec(msgspec.Struct, kw_only=True, frozen=True):
    """What a user asks for: the submit request, before the queue gives it an id."""

    command: str
    name: str = ""
    gpus: int = 1
    vram_mb: int = 0
    node: str | None = None
    priority: int = 0
    timeout: float | None = None
    env: dict[str, str] = {}
    workdir: str | None = None
    tags: list[str] = []
    note: str = ""
    submitter: str = ""  # free-form label (NVQ_SUBMITTER); the OS user is taken from the socket
    after: list[int] = []  # run once all of these completed
    after_any: list[int] = []  # run once all of these ended, however
    # scheduling policy (issue 4)
    retries: int = 0  # restarts allowed after the process vanished (lost)
    cuda: str | None = None  # minimum driver CUDA version, "13.0"
    memory_mb: int = 0  # host RAM needed, also enforced as the job's limit
    lane: str | None = None  # "node:gpu" (node prefix): append to that card's lane
    array: str | None = None  # "0-99[:step][%K]": one job per index
    # e-mail when the job ends (None: the [notify] default)
    email_on_success: bool | None = None
    email_on_failure: bool | None = None
    # machines that come and go (issue 5)
    max_runtime: float | None = None  # on a borrowed node: back to the queue after this
    no_reassign: bool = False  # not safe to run twice: a down node makes it `lost`
    # the job's world: where it was submitted from, and what it takes with it
    cwd: str | None = None  # the submit directory (on the submitting machine)
    env_captured: dict[str, str] | None = None  # the submitting shell's; None: not captured
    manifest_id: str | None = None  # the snapshot of the submit directory, in the blob store
    subdir: str = ""  # where in the snapshot the job starts
    in_place: bool = False  # run in `cwd` itself (no snapshot): only where it exists
    setup: str | None = None  # builds the job's environment once per node (--setup)
    setup_files: list[str] = []  # patterns of the files whose content keys the setup
    # which endings spend a --retries restart: "lost" (the process vanished), "oom"
    # (the kernel's OOM killer killed it, where the runner can tell, or it ran out of
    # GPU memory: retried with a larger --vram), comma-separated
    retries_on: str = "lost"
    # a terminal session (`job shell`): the command runs on a pty the CLI drives
    interactive: bool = False
    begin_at: float | None = None  # --begin: start no earlier than this (Unix seconds)
    # --notify-on: what its webhooks hear of (start, end, fail, time-limit-80); None:
    # each webhook's own `events`
    notify_on: list[str] | None = None
    # --image: run in this container image through the node's runtime; None: bare
    image: str | None = None
    # the image as the queue host saved it (nvq/world/images.py): nodes without it load it
    image_manifest: str | None = None
    image_id: str | None = None  # its id (sha256) on the queue host, where it was found
    # --signal SIG@DELAY: sent DELAY before a --timeout ends the job (or as a
    # preemption stops it), in its normal form `USR1@300`; "" none (nvq.domain.job_signal)
    signal: str = ""
    preemptible: bool = False  # a more urgent job may stop it (nvq.domain.preemption)
    reservation: str | None = None  # only on its cards, in its window (domain.reservations)
    # --quiet: only cards with nothing else on them (no foreign process, no queue job),
    # held whole while it runs; its contention record says whether they stayed so
    quiet: bool = False
    # --kill-on-invalid-dep (Slurm's): cancelled, not held, when an --after prerequisite
    # ends badly (nvq.domain.transitions.hold)
    kill_on_invalid_dep: bool = False


class WrittenFile(msgspec.Struct, frozen=True):
    """A file a job created or changed in its working copy (`job show`, `job pull`)."""

    path: str  # relative to the working copy
    size: int
    mtime: float


class Job(msgspec.Struct, kw_only=True):
    """One job as `--json` documents, replies, the Python client and the `jobs` row
    show it: a `JobRecord` flat, the fields of its `spec` (JobSpec) among the record's
    own, in this order, three renamed (`gpus_requested`, `node_request`,
    `checkpoint_signal`). Each means what it means there. Made from a record by
    `nvq.domain.request.view_of` only. New fields go at the end: older rows and
    documents still decode."""

    id: int
    name: str
    state: JobState
    command: str
    user: str
    submitter: str
    created_at: float
    gpus_requested: int = 1
    vram_mb: int = 0
    node_request: str | None = None
    priority: int = 0
    timeout: float | None = None
    env: dict[str, str] = {}
    workdir: str | None = None
    tags: list[str] = []
    note: str = ""
    after: list[int] = []
    after_any: list[int] = []
    attempt: int = 0
    node: str | None = None
    gpus: list[int] = []
    pid: int | None = None
    dispatched_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    progress: str | None = None
    stderr_tail: str | None = None
    result: Any = None
    rank: float = 0.0
    retries: int = 0
    retried: int = 0
    cuda: str | None = None
    memory_mb: int = 0
    array_id: int | None = None
    array_index: int | None = None
    array_limit: int | None = None
    lane: str | None = None
    lane_pos: float | None = None
    email_on_success: bool | None = None
    email_on_failure: bool | None = None
    max_runtime: float | None = None
    no_reassign: bool = False
    nonce: str = ""
    result_error: str | None = None
    log_truncated: bool = False
    cwd: str | None = None
    env_captured: dict[str, str] | None = None
    manifest_id: str | None = None
    subdir: str = ""
    in_place: bool = False
    setup: str | None = None
    setup_files: list[str] = []
    env_dropped: list[str] = []
    written: list[WrittenFile] = []
    retries_on: str = "lost"
    interactive: bool = False
    port: int | None = None
    begin_at: float | None = None
    notify_on: list[str] | None = None
    image: str | None = None
    image_manifest: str | None = None
    stderr_tail_stream: str | None = None
    checkpoint_signal: str = ""
    image_id: str | None = None
    preemptible: bool = False
    reservation: str | None = None
    phase: str = ""
    quiet: bool = False
    kill_on_invalid_dep: bool = False


class JobRecord(msgspec.Struct, kw_only=True):
    """The queue's record of one job, as the daemon, the decisions and the store hold it:
    what it asks for (`spec`) and what the queue did with it (the rest).

    The rule for a field that is both asked for and shown: it lives in `spec` only, as
    the queue accepted it (submit fills `name` and `submitter`, sorts `after`, resolves
    `lane` to the full node name, expands `array` into array_id/index/limit and clears
    it). The queue's own fields are never in `spec`. `Job` is the same record flat, as
    documents, replies and rows show it (`nvq.domain.request.view_of`)."""

    id: int
    state: JobState
    user: str  # the OS user who submitted it (socket peer credentials)
    created_at: float
    spec: JobSpec
    # the current (or last) attempt
    attempt: int = 0
    node: str | None = None
    gpus: list[int] = []
    pid: int | None = None
    dispatched_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None  # why it is in its state, in words
    progress: str | None = None
    stderr_tail: str | None = None
    result: Any = None
    rank: float = 0.0  # dispatch order within a priority: lower first (a sequence)
    retried: int = 0  # restarts used so far
    array_id: int | None = None  # id of the array's first member
    array_index: int | None = None
    array_limit: int | None = None  # at most this many members running at once
    lane_pos: float | None = None  # order within its lane (`spec.lane`)
    nonce: str = ""  # who the current attempt is to its runner, with the queue's id
    result_error: str | None = None  # why result.json was not kept inline
    log_truncated: bool = False  # its output passed max_log_size and had its middle cut
    # captured variables the node left out, in words ("VIRTUAL_ENV=/x (no such path there)")
    env_dropped: list[str] = []
    # files of its working copy the job created or changed, as of its last attempt's end
    written: list[WrittenFile] = []
    port: int | None = None  # the current attempt's $NVQ_PORT as its runner chose it
    # which log `stderr_tail` is the end of, "stderr" or "stdout" (stderr was empty);
    # None when there is no tail, or an older runner sent it
    stderr_tail_stream: str | None = None
    phase: str = ""  # "setup" while its --setup runs (cards held)


class Event(msgspec.Struct, kw_only=True):
    id: int
    time: float
    kind: str
    job_id: int | None
    node: str | None
    data: dict[str, Any] = {}


class Alert(msgspec.Struct, kw_only=True):
    """One alert as the store keeps it and `nvq queue alerts --json` shows it."""

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


class Reap(msgspec.Struct, frozen=True):
    """A kill the queue owes a node: the job's record is settled, its process is not
    known to be gone yet (the node may be unreachable)."""

    job_id: int
    attempt: int
    node: str
    reason: str


class GpuProcessView(msgspec.Struct, kw_only=True):
    pid: int
    user: str
    used_mb: int | None
    managed: bool
    job_id: int | None


class GpuView(msgspec.Struct, kw_only=True):
    """One card as `nvq queue nodes` shows it: the card itself, and the queue's share."""

    index: int
    name: str
    mem_used_mb: int
    mem_total_mb: int
    mem_used_percent: float
    util_percent: int | None
    external_mem_mb: int
    external_procs: int
    queue_mem_mb: int
    reserved_mb: int
    free_mb: int
    attribution: str  # "measured" | "blind"
    schedulable: bool
    jobs: list[int]
    processes: list[GpuProcessView]
    # The runner's evidence that the card is unhealthy; such a card takes no new job.
    faults: list[str] = []
    health: str = "ok"  # | "unhealthy" | "drained" (domain/card_marks.py): since, by whom
    health_since: float | None = None
    health_by: str | None = None
    mig: str | None = None  # a MIG instance: its profile, and the card it slices
    parent: int | None = None
    reservation: str | None = None  # the live reservation holding it (`nvq reserve ls`)


class NodeView(msgspec.Struct, kw_only=True):
    name: str
    host: str | None
    state: str  # "up" | "down" | "connecting" | "draining" | "ignored"
    last_seen: float | None
    drained: bool = False
    hostname: str | None = None
    backend: str | None = None
    cuda: str | None = None
    # the node's host memory (RAM), not a card's: named so beside the GPUs' mem_* fields
    host_mem_total_mb: int | None = None
    host_mem_free_mb: int | None = None
    running_jobs: int = 0
    cpu_jobs: int = 0
    error: str | None = None
    gpus: list[GpuView] = []
    # link down within node_grace: since when, and when its jobs move (views only, not stored)
    unreachable_since: float | None = None
    grace_ends_at: float | None = None
    # a Slurm pilot's (absent otherwise): its cluster, its allocation's seconds left
    cluster: str | msgspec.UnsetType = msgspec.UNSET
    time_left: float | msgspec.UnsetType | None = msgspec.UNSET  # None: unlimited
    runtime: str | None = None  # what its image jobs run through ("": none; None: unknown)
    images: list[CachedImage] | None = None  # its runtime's store, as last listed (image ls)


# ---------------------------------------------------------------- transactions

SEVERITIES = ("info", "warning", "error")


class NewAlert(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    severity: str
    key: str
    message: str
    job_id: int | None = None
    node: str | None = None
    attempt: int = 0
    detail: str | None = None


class OutboxItem(msgspec.Struct, frozen=True, kw_only=True):
    """A delivery owed. `alert_key` ties it to an alert of the same transaction: it is
    only queued when that alert is new, and its payload gains the alert's id."""

    channel: str
    key: str
    payload: dict[str, Any]
    alert_key: str | None = None


class NewEvent(msgspec.Struct, frozen=True):
    kind: str
    job_id: int | None = None
    node: str | None = None
    data: dict[str, Any] = {}


class NodeSeq(msgspec.Struct, frozen=True):
    node: str
    journal_id: str
    seq: int


class Outcome(msgspec.Struct, frozen=True):
    """What a pure transition decided for one job: its new record (None when the
    event does not apply to it, so there is nothing to write), the events to record,
    and the kill it owes a node (a reap), if its running process must stop."""

    job: JobRecord | None = None
    events: list[NewEvent] = []
    reap: Reap | None = None


class Charge(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt's use of cards, recorded as it ends: `weight` cards (part of a card
    where it reserved part of one) from `started_at` to `ended_at`."""

    job_id: int
    attempt: int
    user: str
    submitter: str
    node: str | None
    started_at: float
    ended_at: float
    weight: float
    # For the usage report: whole cards held, since when (dispatch), how it ended.
    cards: int = 0
    dispatched_at: float | None = None
    outcome: str = ""

    @property
    def gpu_seconds(self) -> float:
        return self.weight * max(0.0, self.ended_at - self.started_at)


class Tx(msgspec.Struct, kw_only=True):
    """One transition: everything in it is committed together or not at all."""

    new_jobs: list[JobRecord] = []  # id is assigned on insert; each gets a job_submitted event
    jobs: list[JobRecord] = []  # updated rows
    events: list[NewEvent] = []
    node_seq: NodeSeq | None = None
    add_reaps: list[Reap] = []
    drop_reaps: list[tuple[int, int]] = []  # (job_id, attempt)
    delete_jobs: list[int] = []
    lanes: list[tuple[str, bool]] = []  # (lane, paused) upserts
    meta: list[tuple[str, str]] = []  # (key, value) upserts of the meta table
    # Fair share: ended attempts, and the accounts' new decayed totals (key, value, at).
    charges: list[Charge] = []
    usage: list[tuple[str, float, float]] = []
    # Filled by the daemon from `events` (nvq.alerts, nvq.notify.plan) just before commit.
    alerts: list[NewAlert] = []
    outbox: list[OutboxItem] = []

    def __bool__(self) -> bool:
        return bool(
            self.new_jobs
            or self.jobs
            or self.events
            or self.node_seq
            or self.add_reaps
            or self.drop_reaps
            or self.delete_jobs
            or self.lanes
            or self.meta
            or self.charges
            or self.usage
            or self.alerts
            or self.outbox
        )
