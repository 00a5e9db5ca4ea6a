"""Runner → daemon messages of the wire protocol (see protocol.py), and the pieces
they share with the daemon's side: what a node reports about itself and its jobs.

Adding a message: its struct here, a member of `RunnerMsg` below, and a re-export in
protocol.py.
"""

from __future__ import annotations

from typing import Literal, Optional, Union

import msgspec

from .artifact_wire import ArtifactsTreeReply, ChunkBytes, SyncWanted
from .image_wire import ImageStaged, NodeImages
from .protocol_commands import Start
from .relay_wire import RelayUp

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
    # What this runner understands beyond protocol 1 ("artifacts", "owner"): the
    # daemon sends newer messages only to a runner that names them here.
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


class ArtifactFile(msgspec.Struct, frozen=True):
    path: str  # relative to the job's artifacts directory, "/"-separated
    size: int
    mtime_ns: int
    mode: Optional[int] = None  # permission bits (0o600 …), to be kept by the copy


class ArtifactsManifest(msgspec.Struct, tag="artifacts", frozen=True):
    """The answer to `ArtifactsQuery`: what a job's $NVQ_ARTIFACTS holds now. Only
    names, sizes and times travel on the event link; the daemon fetches the files
    that changed over a separate SFTP channel, so a large checkpoint never holds up
    the job events queued behind it."""

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


JournaledEvent = Union[JobStarted, JobExited, JobLost, LaunchFailed, AttemptFenced, JobSignalled,
                       SetupPhase]
RunnerMsg = (
    Union[Hello, Sample, JobStarted, JobExited, JobLost, LaunchFailed, AttemptFenced, JobSignalled, SetupPhase, LogData, ArtifactsManifest, Busy, NeedBlobs, ArtifactsTreeReply, SyncWanted, Recovered, RelayUp, ChunkBytes, ImageStaged, NodeImages]
)
