"""The runner ⇄ daemon wire contract, whole: every message, its framing, and the
snapshot manifest a node reads out of the blob store.

Every frame is a 4-byte big-endian length followed by a msgpack-encoded struct from
one of two tagged unions: `RunnerMsg` (runner → daemon) and `DaemonMsg`
(daemon → runner). This module is imported by both sides and depends on msgspec (and
`tree_paths`, the path rule, and `errors`, the runner's exception root) alone, so a node needs nothing of the daemon to run the
runner; it must import on the nodes' oldest CPython (3.9: `Optional`/`Union`, not
`X | None`). Adding a message: its struct in the section of its direction, a member of
its union at the end of the messages, and its name in `__all__`
(tests/runner/test_protocol_contract.py checks all three); then its answer's row in
`nvq.daemon.machines.runner_events.RUNNER_MESSAGES` or
`nvq_runner.daemon_messages.DAEMON_MESSAGES` (a test holds each table to its union).

Durable runner events (`JobStarted`, `JobExited`, `JobLost`, `LaunchFailed`,
`AttemptFenced`, `JobSignalled`, `SetupPhase`) carry a per-node `seq`. The runner
journals each one before sending it and keeps it until the daemon acknowledges it
(`Ack(seq)`, cumulative); after a reconnect the runner sends `Hello` and then replays
every unacknowledged event in order. The daemon stores the last applied `seq` per
node in the same transaction as the transition, so a replayed event is applied
exactly once. `Hello`, `Sample` and `LogData` are not journaled: they describe the
present and are worthless once stale.

Leases: a runner whose `Hello` lists the "lease" feature gets a `Heartbeat(lease)`
on every idle link every few seconds; any daemon frame renews its lease. One that
hears nothing for `lease` seconds stops its reassignable jobs itself and journals
`AttemptFenced` for each, so a partition never leaves a job running in two places.
Older runners lack the feature and never get the frame; older daemons never send it,
and a runner that was never told a lease never fences.

Chunked artifacts: the daemon asks (`ArtifactsTreeQuery`), the runner describes its
view (`ArtifactsTreeReply`), and the daemon reads the byte ranges it lacks, over SFTP
on the node's connection where it has its own, or as `ReadChunks`/`ChunkBytes` on the
runner's link (a Slurm pilot, whose SSH connection is the login node's and sees no
compute-node disk).

Images (runners listing the "images" feature): `StageImage` asks the node to put an
image into its runtime's store from the archive the queue host saved into the blob
store (nvq/world/images.py), unless the store has it already; `ImageStaged` answers
it under the same `req`. `NodeImages` (not journaled) lists the images in the node's
runtime store: in answer to `ListImages` (`nvq image ls`), and unasked after every
image the runner loads, so `queue nodes` shows what the node last said it holds.
Listing costs a run of the runtime's client, so no runner does it unasked on every
connect.

Relay (runners listing the "relay" feature): a job's own `nvq` talks to its queue
through the runner that runs it. The runner listens on a Unix socket in each
attempt's directory (`$NVQ_SOCKET`) and carries every connection made there, byte for
byte: `RelayUp` runner → daemon, `RelayDown` daemon → runner, both numbered by `req`
(one per connection, the runner's count). The bytes are the control socket's own
frames, so the job's client speaks to the daemon exactly as the CLI does on the queue
host. The daemon serves them as the attempt's owner, and only while that attempt runs
on the node that sent them. `eof` ends a direction: the client closed (up), or the
answer is complete (down; the runner then closes the connection). A runner offers the
socket only when the daemon's `Start` says `relay` (an older daemon never does).

The snapshot manifest is not a frame but travels with them: what a job's working copy
holds, file by file. The queue host stores it as a blob of its own (its id is the
sha256 of its encoding), and a node reads it to rebuild the working copy from its blob
cache. Paths are relative POSIX paths; entries are sorted by path, so every directory
comes before what it holds and the same tree always encodes to the same bytes (the
same id: a sweep of one directory stores one manifest).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Literal, Optional, Union

import msgspec

from .errors import NvqRunnerError
from .tree_paths import TreePaths

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")
# A message longer than one frame (the daemon's answer to `job ls --all` at a million
# jobs) goes as consecutive frames, each but the last with this bit set in its length
# word; a reader joins them. Readers that take requests keep the one-frame bound.
CONTINUED = 1 << 31
PART = 8 * 1024 * 1024
DEFAULT_MAX_RESULT = 1024 * 1024
DEFAULT_MAX_LOG_SIZE = 10 * 1024**3


# ---------------------------------------------------------------- shared pieces


class GpuInfo(msgspec.Struct, frozen=True):
    """A card as the runner found it at start-up."""

    index: int
    name: str
    uuid: str
    total_mb: int
    # A MIG instance (a slice of card `parent`, placed like a small card): its
    # profile ("3g.40gb"); its `uuid` (MIG-…) is what CUDA_VISIBLE_DEVICES names.
    mig: Optional[str] = None
    parent: Optional[int] = None


class GpuProcess(msgspec.Struct, frozen=True):
    """A process holding memory on a card. `used_mb` is None when the driver is blind
    (it names the process but not its memory). `job_id` is set when the process
    belongs to a job this runner started."""

    pid: int
    user: str
    used_mb: Optional[int]
    job_id: Optional[int] = None


class GpuSample(msgspec.Struct, frozen=True):
    index: int
    total_mb: int
    used_mb: int
    util_percent: Optional[int]
    processes: list[GpuProcess]
    blind: bool = False
    # Why the card is unhealthy, one line of evidence each (gpu/health.py); []: healthy.
    faults: list[str] = []


class ActiveJob(msgspec.Struct, frozen=True):
    """A job attempt whose process the runner is watching right now."""

    job_id: int
    attempt: int
    pid: int
    started_at: float


# ---------------------------------------------------------------- daemon → runner


class Start(msgspec.Struct, tag="start", frozen=True):
    """Start one attempt of a job. Idempotent per (job_id, attempt): a runner that has
    already seen this attempt starts nothing new."""

    job_id: int
    attempt: int
    node: str
    name: str
    command: str  # a bash script body
    gpus: list[int]
    env: dict[str, str] = {}
    workdir: Optional[str] = None
    timeout: Optional[float] = None  # seconds from start
    kill_grace: float = 10.0
    # `--signal SIG@DELAY`: signal number `signal` is sent to the job's group
    # `signal_before` seconds before its timeout (`JobSignalled`); 0: none.
    signal: int = 0
    signal_before: float = 0.0
    # Host memory limit (MiB): a cgroup v2 limit where the runner can make one,
    # else an address-space rlimit. None: no limit.
    memory_mb: Optional[int] = None
    # Who this job is beyond its id (see identity.py): the queue's id and a per-job
    # random nonce. A Start differing in either is a new job with its own directory.
    queue_id: str = ""
    nonce: str = ""
    # A result.json larger than this (bytes) stays on the node and is not inlined.
    max_result: int = DEFAULT_MAX_RESULT
    # Each of stdout.log and stderr.log is kept under this many bytes: past it, the
    # runner cuts the log's middle, keeping its first MiB and its newest output.
    max_log_size: int = DEFAULT_MAX_LOG_SIZE
    # The OS user the job runs as ("": the runner's own). A runner that runs as root
    # starts it through setpriv with that user's ids, groups and home.
    user: str = ""
    # The job's world. `manifest_id`: the snapshot to materialise into
    # $NVQ_JOB_DIR/work (the job starts in work/<subdir>). `env_mode` says what the
    # job's environment starts from: "runner" the runner's own (nothing captured),
    # "local" the captured environment as it was, "remote" the node's login
    # environment plus the captured variables that make sense there.
    manifest_id: str = ""
    subdir: str = ""
    env_mode: Literal["runner", "local", "remote"] = "runner"
    env_captured: dict[str, str] = {}
    node_env: dict[str, str] = {}  # [[nodes]] env, between the captured and `env`
    setup: str = ""  # built once per node and key before the job (setup_env.py)
    setup_files: list[str] = []  # patterns of the files keying the setup ([] default)
    cache_size: int = 0  # [[nodes]] cache_size in bytes (0: the runner's default)
    # The previous attempt's artifacts (a chunk tree in the blob store): mounted at
    # $NVQ_ARTIFACTS on demand, or restored in full where FUSE is not available or
    # `lazy_artifacts` is off ([[nodes]] lazy_artifacts). "": none.
    artifacts_tree: str = ""
    # The prerequisites' artifacts (`--after`/`--after-any`), given to the job read-only
    # at $NVQ_INPUTS/<id>/ the same way: job id (decimal) → its newest chunk tree ("":
    # it synced none, an empty folder). {}: no prerequisites, no $NVQ_INPUTS.
    inputs: dict[str, str] = {}
    # Run in this container image (container.py) through `runtime` ("": the first
    # runtime the node has); "": a bare process.
    image: str = ""
    runtime: str = ""
    # The image as the queue host saved it (chunks in the blob store): loaded from
    # there when the node's runtime lacks the image. "": the node has it or pulls it.
    image_manifest: str = ""
    # Its id as the queue host saved it: a node whose store has another image under
    # the same name (an older push of the tag) loads this one. "": the name decides.
    image_id: str = ""
    lazy_artifacts: bool = True
    # False for a `--no-reassign` job: the daemon never runs it elsewhere, so a runner
    # whose lease lapses lets it run on (see `Heartbeat`).
    reassign: bool = True
    # A terminal session (`nvq job shell`): ptyhost.py leads the job instead of
    # wrapper.sh and runs `command` (or, when empty, the user's shell) on a pty.
    interactive: bool = False
    # The daemon serves this attempt's `$NVQ_SOCKET` (the relay section above): offer it.
    relay: bool = False


class Kill(msgspec.Struct, tag="kill", frozen=True):
    """End an attempt: SIGTERM to its group, SIGKILL after `grace` seconds."""

    job_id: int
    attempt: int
    reason: str = "cancel"
    grace: float = 10.0
    queue_id: str = ""  # as in the attempt's Start
    nonce: str = ""
    # Sent instead of SIGTERM (a preempted or moved job's `--signal`, so it can
    # checkpoint before it is stopped); 0: SIGTERM.
    signal: int = 0


class Ack(msgspec.Struct, tag="ack", frozen=True):
    """Every journaled event up to and including `seq` is applied and may be dropped."""

    seq: int


class Tail(msgspec.Struct, tag="tail", frozen=True):
    """Send the last `lines` lines of a job's log (all of it when lines < 0), then,
    with `follow`, what is appended until the job's attempt ends or `Unfollow`."""

    req: int
    job_id: int
    # "both": both logs from their offsets on, each piece naming its stream, in the
    # order written (`write_order`); `lines` and `max_bytes` do not apply.
    stream: Literal["stdout", "stderr", "setup", "both"] = "stdout"
    lines: int = 50
    follow: bool = False
    # At most this many bytes of the existing log (0: no cap); a cut answer starts
    # with the line "[nvq: output cut to the last 8 MiB]".
    max_bytes: int = 8 * 1024 * 1024
    attempt: Optional[int] = None  # that attempt's log (None: the latest run on the node)
    # From this byte on, whatever `lines` says (the queue host's copy taking up where
    # it stopped); past the end (the log was cut meanwhile): from its end.
    offset: Optional[int] = None
    err_offset: Optional[int] = None  # with "both": stderr's (`offset` is stdout's)


class Unfollow(msgspec.Struct, tag="unfollow", frozen=True):
    req: int


class Sync(msgspec.Struct, tag="sync", frozen=True):
    """Ask for a `Sample` now (the daemon wants fresh figures)."""


class ArtifactsQuery(msgspec.Struct, tag="artifacts_query", frozen=True):
    """List job `job_id`'s artifacts directory (answered by `ArtifactsManifest`)."""

    req: int
    job_id: int


class Owner(msgspec.Struct, tag="owner", frozen=True):
    """Whose activity makes this node busy (None: nobody's), and after how many
    seconds without terminal input a login session counts as idle."""

    user: Optional[str]
    idle: float = 600.0


class BlobData(msgspec.Struct, tag="blob_data", frozen=True):
    """A piece of blob `sha256` answering `NeedBlobs(req)`; `eof` ends that blob. The
    answer ends with `done` (sha256 empty), or with `error` when the queue host
    cannot serve it."""

    req: int
    sha256: str = ""
    data: bytes = b""
    eof: bool = False
    done: bool = False
    error: Optional[str] = None


class Heartbeat(msgspec.Struct, tag="heartbeat", frozen=True):
    """The daemon is here. Sent on an idle link every few seconds, only to a runner
    whose `Hello` lists the "lease" feature. Any frame from the daemon renews the
    runner's lease; this one also says how long it lasts: a runner that hears nothing
    for `lease` seconds stops its reassignable jobs itself (lease.py), because past
    `node_grace` the daemon runs them elsewhere. A runner echoes a `seq` other than
    0 with `LeaseHeld`, so the daemon knows from when this length is the one held."""

    lease: float
    seq: int = 0


class LeaseHeld(msgspec.Struct, tag="lease_held", frozen=True):
    """The runner processed `Heartbeat` `seq`: its lease is that heartbeat's from now
    on (the daemon stops counting a longer one it granted before)."""

    seq: int


class RecoverQuery(msgspec.Struct, tag="recover_query", frozen=True):
    """What this node kept of jobs `job_ids` of queue `queue_id`, which queue.db has
    forgotten (a damaged WAL, an older backup restored): answered by `Recovered`."""

    req: int
    job_ids: list[int]
    queue_id: str = ""


# ---------------------------------------------------------------- runner → daemon


class Hello(msgspec.Struct, tag="hello", frozen=True):
    """First frame on every connection: what this node is and where its journal is."""

    hostname: str
    runner_version: str
    protocol: int
    backend: str  # "nvml" | "fake" | "none"
    cuda: Optional[str]  # driver's CUDA version, e.g. "13.0"
    driver: Optional[str]
    mem_total_mb: int
    cpus: int
    gpus: list[GpuInfo]
    active: list[ActiveJob]
    journal_head: int  # seq of the last event written; replay follows up to it
    boot_id: str
    pid: int  # the runner's own pid
    # Identifies the journal's life: a new id (node home wiped, runner reinstalled)
    # tells the daemon that seqs restarted and its applied seq no longer applies.
    journal_id: str = ""
    # What this runner understands beyond protocol 1 ("chunked_artifacts", "owner"):
    # the daemon sends newer messages only to a runner that names them here.
    features: list[str] = []
    # The queue id of the last Start that carried one, and the highest job id seen
    # for that queue: a daemon restored from a backup continues its ids after it.
    queue_id: str = ""
    max_job_id: int = 0
    # Inside a Slurm job (a pilot): the cards its allocation was granted, as NVML
    # indices; only those may be offered. None outside one.
    allocated: Optional[list[int]] = None
    # When this runner process started (`nvq node status`: its uptime); 0: unknown.
    started_at: float = 0.0
    # The container runtimes installed on the node (container.py), preferred first.
    runtimes: list[str] = []


class Sample(msgspec.Struct, tag="sample", frozen=True):
    time: float
    gpus: list[GpuSample]
    mem_free_mb: int
    progress: dict[int, str]  # job id → last line of its status file
    # job id → card → the most MiB its running attempt's processes held so far
    # (vram_peaks.py): what `job show` says of a job still running
    peaks: dict[int, dict[int, int]] = {}


class JobStarted(msgspec.Struct, tag="started", frozen=True):
    seq: int
    job_id: int
    attempt: int
    pid: int
    started_at: float
    # captured variables this node left out of the job's environment, in words
    env_dropped: list[str] = []
    port: Optional[int] = None  # the attempt's $NVQ_PORT (ports.py)


ExitReason = Literal["exit", "timeout", "killed"]


class JobExited(msgspec.Struct, tag="exited", frozen=True):
    """A job's process group ended. `exit_code` follows the shell's convention
    (128+N when killed by signal N, `signal` is then N). `reason` says who ended it:
    the job itself ("exit"), the runner's timeout ("timeout") or a `Kill` ("killed")."""

    seq: int
    job_id: int
    attempt: int
    exit_code: Optional[int]
    signal: Optional[int]
    ended_at: float
    reason: ExitReason
    progress: Optional[str] = None
    stderr_tail: str = ""
    # Which log `stderr_tail` is the end of: "stderr", or "stdout" when stderr was
    # empty ("" from an older runner, or when both were).
    stderr_tail_stream: str = ""
    result: Optional[str] = None  # raw text of $NVQ_JOB_DIR/result.json, if written
    # Why `result` is None although result.json exists (over `Start.max_result`).
    result_error: Optional[str] = None
    # The job's stdout or stderr passed `Start.max_log_size` and had its middle cut.
    log_truncated: bool = False
    # Files of its working copy the job created or changed (workfiles.py):
    # (path, size, mtime), by path, at most workfiles.MAX_LISTED.
    written: list[tuple[str, int, float]] = []
    # The kernel's OOM killer killed a process of the job's memory cgroup (its
    # `memory.events` says so); False where the runner cannot tell.
    oom_killed: bool = False
    # Its $NVQ_ARTIFACTS held something when it ended. False lets the daemon skip the
    # final sync of a job that never kept artifacts (True from older runners).
    artifacts: bool = True
    # Faults its runner saw on the attempt's cards while it ran (gpu/watch.py), by
    # card: a failure then is the card's, and the daemon requeues it.
    card_faults: dict[int, list[str]] = {}
    # The most GPU memory its own processes held at once, by card (MiB), from the
    # runner's samples (vram_peaks.py); {} when none was seen or the runner is older.
    peak_vram_mb: dict[int, int] = {}


class JobLost(msgspec.Struct, tag="lost", frozen=True):
    """A job attempt's process is gone and its exit status cannot be known (killed
    outside the wrapper, node rebooted), or a `Kill` named an attempt never started."""

    seq: int
    job_id: int
    attempt: int
    reason: str
    at: float


class LaunchFailed(msgspec.Struct, tag="launch_failed", frozen=True):
    """The job could not be started at all: bad workdir, disk full, permissions."""

    seq: int
    job_id: int
    attempt: int
    error: str
    at: float
    phase: str = ""  # "setup": the job's --setup failed (its log: `job logs --setup`)


class AttemptFenced(msgspec.Struct, tag="attempt_fenced", frozen=True):
    """The runner heard nothing from its daemon for `lease` seconds and is stopping
    this attempt itself (SIGTERM, kill grace, SIGKILL): the daemon may run the job
    elsewhere after `node_grace`, and two copies must never run at once. Its
    `JobExited` ("killed") follows when the process is gone."""

    seq: int
    job_id: int
    attempt: int
    at: float  # when the runner gave up (wall clock)
    silent_for: float  # seconds since the daemon's last frame
    lease: float


class SetupPhase(msgspec.Struct, tag="setup_phase", frozen=True):
    """The attempt's `--setup` began (`done` False) or ended well (`done` True;
    `cached`: an environment built before was reused). A failed setup is a
    `LaunchFailed` with `phase="setup"`."""

    seq: int
    job_id: int
    attempt: int
    at: float
    done: bool = False
    cached: bool = False


class JobSignalled(msgspec.Struct, tag="signalled", frozen=True):
    """The runner sent the job's `--signal` (`Start.signal`) to its group, ahead of
    the end its timeout sets, so the job can checkpoint."""

    seq: int
    job_id: int
    attempt: int
    signal: int
    at: float  # when it was sent (wall clock)
    end_at: float  # when the timeout ends the attempt


class LogData(msgspec.Struct, tag="log", frozen=True):
    """A piece of a job's log in answer to `Tail`; `eof` ends the answer."""

    req: int
    data: bytes = b""
    eof: bool = False
    error: Optional[str] = None
    stream: Optional[Literal["stdout", "stderr"]] = None  # answering a Tail of "both"


class ArtifactFile(msgspec.Struct, frozen=True):
    path: str  # relative to the job's artifacts directory, "/"-separated
    size: int
    mtime_ns: int
    mode: Optional[int] = None  # permission bits (0o600 …)


class ArtifactsManifest(msgspec.Struct, tag="artifacts", frozen=True):
    """The answer to `ArtifactsQuery`: where a job's $NVQ_ARTIFACTS is on the node and
    what it holds now (names, sizes and times), for `job pull` and a fresh start.
    Artifacts themselves travel as chunk trees (`ArtifactsTreeQuery`)."""

    req: int
    job_id: int
    files: list[ArtifactFile] = []
    root: str = ""  # absolute path of the directory on the node
    error: Optional[str] = None


class Busy(msgspec.Struct, tag="busy", frozen=True):
    """The node's owner is (or is no longer) using it: an interactive login whose
    terminal was touched within the idle limit. Sent when it changes, and after each
    `Owner`."""

    busy: bool
    sessions: int = 0  # the owner's active (not idle) login sessions
    idle: Optional[float] = None  # seconds since the owner's most recent terminal input


class NeedBlobs(msgspec.Struct, tag="need_blobs", frozen=True):
    """The runner lacks these snapshot blobs (a manifest, or files of one) to build a
    job's working copy; the daemon answers with `BlobData` frames under `req`."""

    req: int
    job_id: int
    hashes: list[str]


class StartRecord(msgspec.Struct, frozen=True):
    """What a node kept of one attempt: the `Start` it was given (start.json), when it
    started, and how it ended (`ended_at` None: it runs, or its end is unknown)."""

    start: Start
    started_at: float
    running: bool
    pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    ended_at: Optional[float] = None
    killed: bool = False  # ended by a kill (the queue's, or its timeout's)


class Recovered(msgspec.Struct, tag="recovered", frozen=True):
    """The answer to `RecoverQuery`: the newest attempt this node kept of each job
    asked about that it has a start record of."""

    req: int
    records: list[StartRecord] = []


# ---------------------------------------------------------------- chunked artifacts (either way)


class ChunkSource(msgspec.Struct, frozen=True, array_like=True):
    """Chunk `sha256` is `size` bytes at `offset` of `path` under the reply's root."""

    sha256: str
    path: str
    offset: int
    size: int


class ArtifactsTreeQuery(msgspec.Struct, tag="artifacts_tree_query", frozen=True):
    """Describe job `job_id`'s artifacts as a chunk tree (answered by ArtifactsTreeReply).
    `known` is the tree the queue host holds already: files it describes with the same
    size and mtime are not read again."""

    req: int
    job_id: int
    known: str = ""


class ArtifactsTreeReply(msgspec.Struct, tag="artifacts_tree", frozen=True):
    req: int
    job_id: int
    tree: bytes = b""  # encode_tree()
    root: str = ""  # where `sources` are read (the upper directory when mounted)
    sources: list[ChunkSource] = []
    fetched_bytes: int = 0  # chunks this attempt pulled from the queue host so far
    mode: str = "plain"  # "mounted" | "restored" | "plain"
    note: str = ""
    error: Optional[str] = None


class SyncWanted(msgspec.Struct, tag="sync_wanted", frozen=True):
    """The job touched `$NVQ_ARTIFACTS/.sync`: sync its artifacts now, not at the next
    period."""

    job_id: int
    attempt: int


class ReadChunks(msgspec.Struct, tag="read_chunks", frozen=True):
    """Read `ranges` ((offset, size) pairs) of `path`, relative to the root job
    `job_id`'s last ArtifactsTreeReply named; answered by ChunkBytes. The daemon keeps
    each request well under the frame limit."""

    req: int
    job_id: int
    path: str
    ranges: list[tuple[int, int]]


class ChunkBytes(msgspec.Struct, tag="chunk_bytes", frozen=True):
    req: int
    data: list[bytes] = []  # one per range, in order
    error: Optional[str] = None


# ---------------------------------------------------------------- images (either way)


class StageImage(msgspec.Struct, tag="stage_image", frozen=True):
    req: int
    image: str  # the reference the jobs name
    image_manifest: str  # the saved archive's manifest in the blob store
    runtime: str = ""  # [[nodes]] runtime ("": the first the node has)
    image_id: str = ""  # the saved image's id: the node's image of that name must be it


class ListImages(msgspec.Struct, tag="list_images", frozen=True):
    req: int


class ImageStaged(msgspec.Struct, tag="image_staged", frozen=True):
    req: int
    loaded: bool = False  # False without error: the store had it already
    fetched_bytes: int = 0  # archive bytes that came over the link (not in the cache)
    seconds: float = 0.0
    error: Optional[str] = None


class CachedImage(msgspec.Struct, frozen=True):
    id: str  # the runtime's image id (hex, no "sha256:")
    ref: str  # one of its names ("": none); an image with several names is several rows
    size: int  # bytes, as the runtime counts them


class NodeImages(msgspec.Struct, tag="node_images", frozen=True):
    images: list[CachedImage] = []
    runtime: str = ""  # the runtime asked ("": none that can list images)
    req: int = 0  # the `ListImages` answered (0: sent unasked, after a load)


# ---------------------------------------------------------------- relay (either way)


class RelayUp(msgspec.Struct, tag="relay_up", frozen=True):
    req: int
    job_id: int
    attempt: int
    data: bytes = b""
    eof: bool = False


class RelayDown(msgspec.Struct, tag="relay_down", frozen=True):
    req: int
    data: bytes = b""
    eof: bool = False


# ---------------------------------------------------------------- the unions

DaemonMsg = Union[
    Start, Kill, Ack, Tail, Unfollow, Sync, ArtifactsQuery, Owner, BlobData, Heartbeat,
    RecoverQuery, ArtifactsTreeQuery, ReadChunks, StageImage, ListImages, RelayDown,
]
JournaledEvent = Union[
    JobStarted, JobExited, JobLost, LaunchFailed, AttemptFenced, JobSignalled, SetupPhase
]
RunnerMsg = Union[
    Hello, Sample, JobStarted, JobExited, JobLost, LaunchFailed, AttemptFenced,
    JobSignalled, SetupPhase, LogData, ArtifactsManifest, Busy, NeedBlobs, Recovered,
    ArtifactsTreeReply, SyncWanted, ChunkBytes, ImageStaged, NodeImages, RelayUp,
    LeaseHeld,
]


# ---------------------------------------------------------------- the snapshot manifest

MANIFEST_VERSION = 1

FILE: Literal["f"] = "f"
DIR: Literal["d"] = "d"
LINK: Literal["l"] = "l"


class Entry(msgspec.Struct, frozen=True, array_like=True):
    """One path of the tree. `sha256` is set for files, `target` for symlinks (the link
    text as it was, never followed)."""

    path: str
    kind: Literal["f", "d", "l"]
    mode: int  # permission bits only (0o7777)
    size: int = 0
    sha256: str = ""
    target: str = ""


class Manifest(msgspec.Struct, frozen=True):
    entries: list[Entry]
    version: int = MANIFEST_VERSION

    def files(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == FILE]

    def hashes(self) -> set[str]:
        """The blobs this tree needs (each once, however many files share it)."""
        return {e.sha256 for e in self.entries if e.kind == FILE}

    def total_size(self) -> int:
        return sum(e.size for e in self.entries if e.kind == FILE)


class ManifestError(NvqRunnerError, ValueError):
    """A manifest that cannot be materialised safely."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Manifest)


def encode_manifest(manifest: Manifest) -> bytes:
    return _encoder.encode(manifest)


def decode_manifest(data: bytes) -> Manifest:
    manifest = _decoder.decode(data)
    check_manifest(manifest)
    return manifest


def manifest_id(manifest: Manifest) -> str:
    return hashlib.sha256(encode_manifest(manifest)).hexdigest()


def is_hash(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def check_manifest(manifest: Manifest) -> None:
    """Refuse anything that could write outside the destination: absolute paths, `..`,
    duplicate paths, or an entry whose parent is not a directory of the same manifest
    (so nothing is ever written through a symlink the manifest itself created): the
    rule of tree_paths, shared with artifact trees."""
    paths = TreePaths("manifest")
    for entry in manifest.entries:
        problem = paths.add(entry.path, entry.kind == DIR)
        if problem is not None:
            raise ManifestError(problem)
        if entry.kind == FILE and not is_hash(entry.sha256):
            raise ManifestError(f"{entry.path!r} has no valid sha256")


# ---------------------------------------------------------------- framing

_runner_decoder = msgspec.msgpack.Decoder(RunnerMsg)
_daemon_decoder = msgspec.msgpack.Decoder(DaemonMsg)
_encoder = msgspec.msgpack.Encoder()


class FrameError(NvqRunnerError):
    """The byte stream is not a sequence of valid frames."""


def encode_frame(msg: RunnerMsg | DaemonMsg) -> bytes:
    payload = _encoder.encode(msg)
    return _HEADER.pack(len(payload)) + payload


def encode_payload(msg: RunnerMsg | DaemonMsg) -> bytes:
    """The payload alone, as the journal stores it."""
    return _encoder.encode(msg)


def decode_runner_payload(payload: bytes) -> RunnerMsg:
    try:
        return _runner_decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise FrameError(f"bad runner frame: {exc}") from exc


def decode_daemon_payload(payload: bytes) -> DaemonMsg:
    try:
        return _daemon_decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise FrameError(f"bad daemon frame: {exc}") from exc


def split_frames(payload: bytes, part: int = PART) -> bytes:
    """`payload` framed: one frame when it fits in `part`, else consecutive frames
    marked CONTINUED but the last."""
    if len(payload) <= part:
        return _HEADER.pack(len(payload)) + payload
    view = memoryview(payload)
    pieces: list[bytes | memoryview] = []
    for start in range(0, len(payload), part):
        piece = view[start : start + part]
        last = start + part >= len(payload)
        pieces += [_HEADER.pack(len(piece) | (0 if last else CONTINUED)), piece]
    return b"".join(pieces)


class FrameReader:
    """Incremental splitter: feed it bytes as they arrive, take whole payloads out.
    `max_message`: the most a message split over CONTINUED frames may add up to
    (None: no bound, for a client reading its own daemon's answer)."""

    def __init__(self, max_message: int | None = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._partial = bytearray()
        self._max = max_message

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= _HEADER.size:
            (word,) = _HEADER.unpack_from(self._buf)
            size = word & ~CONTINUED
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
            end = _HEADER.size + size
            if len(self._buf) < end:
                break
            piece = self._buf[_HEADER.size : end]
            if self._partial or word & CONTINUED:
                self._partial += piece
                if self._max is not None and len(self._partial) > self._max:
                    raise FrameError(
                        f"message of over {len(self._partial)} bytes is over the "
                        f"{self._max} limit"
                    )
                if not word & CONTINUED:
                    out.append(bytes(self._partial))
                    self._partial.clear()
            else:
                out.append(bytes(piece))
            del self._buf[:end]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)


__all__ = [
    "CONTINUED",
    "DEFAULT_MAX_LOG_SIZE",
    "DEFAULT_MAX_RESULT",
    "DIR",
    "FILE",
    "LINK",
    "MANIFEST_VERSION",
    "MAX_FRAME",
    "PART",
    "PROTOCOL_VERSION",
    "Ack",
    "ActiveJob",
    "ArtifactFile",
    "ArtifactsManifest",
    "ArtifactsQuery",
    "ArtifactsTreeQuery",
    "ArtifactsTreeReply",
    "AttemptFenced",
    "BlobData",
    "Busy",
    "CachedImage",
    "ChunkBytes",
    "ChunkSource",
    "DaemonMsg",
    "Entry",
    "ExitReason",
    "FrameError",
    "FrameReader",
    "GpuInfo",
    "GpuProcess",
    "GpuSample",
    "Heartbeat",
    "Hello",
    "ImageStaged",
    "JobExited",
    "JobLost",
    "JobSignalled",
    "JobStarted",
    "JournaledEvent",
    "Kill",
    "LaunchFailed",
    "LeaseHeld",
    "ListImages",
    "LogData",
    "Manifest",
    "ManifestError",
    "NeedBlobs",
    "NodeImages",
    "Owner",
    "ReadChunks",
    "RecoverQuery",
    "Recovered",
    "RelayDown",
    "RelayUp",
    "RunnerMsg",
    "Sample",
    "SetupPhase",
    "StageImage",
    "Start",
    "StartRecord",
    "Sync",
    "SyncWanted",
    "Tail",
    "Unfollow",
    "check_manifest",
    "decode_daemon_payload",
    "decode_manifest",
    "decode_runner_payload",
    "encode_frame",
    "encode_manifest",
    "encode_payload",
    "is_hash",
    "manifest_id",
    "split_frames",
]
