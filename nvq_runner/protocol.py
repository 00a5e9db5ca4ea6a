"""The runner ⇄ daemon wire protocol: msgspec structs and their framing.

Every frame is a 4-byte big-endian length followed by a msgpack-encoded struct from
one of two tagged unions: `RunnerMsg` (runner → daemon) and `DaemonMsg`
(daemon → runner). This module is imported by both sides and depends on msgspec
alone, so a node needs nothing of the daemon to run the runner.

Durable runner events (`JobStarted`, `JobExited`, `JobLost`, `LaunchFailed`) carry a
per-node `seq`. The runner journals each one before sending it and keeps it until the
daemon acknowledges it (`Ack(seq)`, cumulative); after a reconnect the runner sends
`Hello` and then replays every unacknowledged event in order. The daemon stores the
last applied `seq` per node in the same transaction as the transition, so a replayed
event is applied exactly once. `Hello`, `Sample` and `LogData` are not journaled:
they describe the present and are worthless once stale.
"""

from __future__ import annotations

import struct
from typing import Literal

import msgspec

PROTOCOL_VERSION = 1
MAX_FRAME = 64 * 1024 * 1024
DEFAULT_MAX_RESULT = 1024 * 1024
DEFAULT_MAX_LOG_SIZE = 10 * 1024**3
_HEADER = struct.Struct(">I")


# ---------------------------------------------------------------- shared pieces


class GpuInfo(msgspec.Struct, frozen=True):
    """A card as the runner found it at start-up."""

    index: int
    name: str
    uuid: str
    total_mb: int


class GpuProcess(msgspec.Struct, frozen=True):
    """A process holding memory on a card. `used_mb` is None when the driver is blind
    (it names the process but not its memory). `job_id` is set when the process
    belongs to a job this runner started."""

    pid: int
    user: str
    used_mb: int | None
    job_id: int | None = None


class GpuSample(msgspec.Struct, frozen=True):
    index: int
    total_mb: int
    used_mb: int
    util_percent: int | None
    processes: list[GpuProcess]
    blind: bool = False


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
    cuda: str | None  # driver's CUDA version, e.g. "13.0"
    driver: str | None
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


ExitReason = Literal["exit", "timeout", "killed"]


class JobExited(msgspec.Struct, tag="exited", frozen=True):
    """A job's process group ended. `exit_code` follows the shell's convention
    (128+N when killed by signal N, `signal` is then N). `reason` says who ended it:
    the job itself ("exit"), the runner's timeout ("timeout") or a `Kill` ("killed")."""

    seq: int
    job_id: int
    attempt: int
    exit_code: int | None
    signal: int | None
    ended_at: float
    reason: ExitReason
    progress: str | None = None
    stderr_tail: str = ""
    result: str | None = None  # raw text of $NVQ_JOB_DIR/result.json, if written
    # Why `result` is None although result.json exists (over `Start.max_result`).
    result_error: str | None = None
    # The job's stdout or stderr passed `Start.max_log_size` and had its middle cut.
    log_truncated: bool = False


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


class LogData(msgspec.Struct, tag="log", frozen=True):
    """A piece of a job's log in answer to `Tail`; `eof` ends the answer."""

    req: int
    data: bytes = b""
    eof: bool = False
    error: str | None = None


class ArtifactFile(msgspec.Struct, frozen=True):
    path: str  # relative to the job's artifacts directory, "/"-separated
    size: int
    mtime_ns: int
    mode: int | None = None  # permission bits (0o600 …), to be kept by the copy


class ArtifactsManifest(msgspec.Struct, tag="artifacts", frozen=True):
    """The answer to `ArtifactsQuery`: what a job's $NVQ_ARTIFACTS holds now. Only
    names, sizes and times travel on the event link; the daemon fetches the files
    that changed over a separate SFTP channel, so a large checkpoint never holds up
    the job events queued behind it."""

    req: int
    job_id: int
    files: list[ArtifactFile] = []
    root: str = ""  # absolute path of the directory on the node
    error: str | None = None


class Busy(msgspec.Struct, tag="busy", frozen=True):
    """The node's owner is (or is no longer) using it: an interactive login whose
    terminal was touched within the idle limit. Sent when it changes, and after each
    `Owner`."""

    busy: bool
    sessions: int = 0  # the owner's active (not idle) login sessions
    idle: float | None = None  # seconds since the owner's most recent terminal input


class NeedBlobs(msgspec.Struct, tag="need_blobs", frozen=True):
    """The runner lacks these snapshot blobs (a manifest, or files of one) to build a
    job's working copy; the daemon answers with `BlobData` frames under `req`."""

    req: int
    job_id: int
    hashes: list[str]


JournaledEvent = JobStarted | JobExited | JobLost | LaunchFailed
RunnerMsg = (
    Hello
    | Sample
    | JobStarted
    | JobExited
    | JobLost
    | LaunchFailed
    | LogData
    | ArtifactsManifest
    | Busy
    | NeedBlobs
)


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
    workdir: str | None = None
    timeout: float | None = None  # seconds from start
    kill_grace: float = 10.0
    # Host memory limit (MiB): a cgroup v2 limit where the runner can make one,
    # else an address-space rlimit. None: no limit.
    memory_mb: int | None = None
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


class Kill(msgspec.Struct, tag="kill", frozen=True):
    """End an attempt: SIGTERM to its group, SIGKILL after `grace` seconds."""

    job_id: int
    attempt: int
    reason: str = "cancel"
    grace: float = 10.0
    queue_id: str = ""  # as in the attempt's Start
    nonce: str = ""


class Ack(msgspec.Struct, tag="ack", frozen=True):
    """Every journaled event up to and including `seq` is applied and may be dropped."""

    seq: int


class Tail(msgspec.Struct, tag="tail", frozen=True):
    """Send the last `lines` lines of a job's log (all of it when lines < 0), then,
    with `follow`, what is appended until the job's attempt ends or `Unfollow`."""

    req: int
    job_id: int
    stream: Literal["stdout", "stderr", "setup"] = "stdout"
    lines: int = 50
    follow: bool = False
    # At most this many bytes of the existing log (0: no cap); a cut answer starts
    # with the line "[nvq: output cut to the last 8 MiB]".
    max_bytes: int = 8 * 1024 * 1024
    attempt: int | None = None  # that attempt's log (None: the latest run on the node)


class Unfollow(msgspec.Struct, tag="unfollow", frozen=True):
    req: int


class Sync(msgspec.Struct, tag="sync", frozen=True):
    """Ask for a `Sample` now (the daemon wants fresh figures)."""


class ArtifactsQuery(msgspec.Struct, tag="artifacts_query", frozen=True):
    """Describe job `job_id`'s artifacts directory (answered by `ArtifactsManifest`)."""

    req: int
    job_id: int


class Owner(msgspec.Struct, tag="owner", frozen=True):
    """Whose activity makes this node busy (None: nobody's), and after how many
    seconds without terminal input a login session counts as idle."""

    user: str | None
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
    error: str | None = None


DaemonMsg = (
    Start | Kill | Ack | Tail | Unfollow | Sync | ArtifactsQuery | Owner | BlobData
)


# ---------------------------------------------------------------- framing

_runner_decoder = msgspec.msgpack.Decoder(RunnerMsg)
_daemon_decoder = msgspec.msgpack.Decoder(DaemonMsg)
_encoder = msgspec.msgpack.Encoder()


class FrameError(Exception):
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


class FrameReader:
    """Incremental splitter: feed it bytes as they arrive, take whole payloads out."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf)
            if size > MAX_FRAME:
                raise FrameError(f"frame of {size} bytes is over the {MAX_FRAME} limit")
            end = _HEADER.size + size
            if len(self._buf) < end:
                break
            out.append(bytes(self._buf[_HEADER.size : end]))
            del self._buf[:end]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)
