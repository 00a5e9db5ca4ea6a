"""Daemon → runner messages of the wire protocol (see protocol.py): what the daemon
asks a node to do.

Adding a message: its struct here, a member of `DaemonMsg` below, and a re-export in
protocol.py.
"""

from __future__ import annotations

from typing import Literal, Optional, Union

import msgspec

from .artifact_wire import ArtifactsTreeQuery, ReadChunks
from .image_wire import ListImages, StageImage
from .relay_wire import RelayDown

DEFAULT_MAX_RESULT = 1024 * 1024
DEFAULT_MAX_LOG_SIZE = 10 * 1024**3


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
    # The daemon serves this attempt's `$NVQ_SOCKET` (relay_wire.py): offer it.
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
    stream: Literal["stdout", "stderr", "setup"] = "stdout"
    lines: int = 50
    follow: bool = False
    # At most this many bytes of the existing log (0: no cap); a cut answer starts
    # with the line "[nvq: output cut to the last 8 MiB]".
    max_bytes: int = 8 * 1024 * 1024
    attempt: Optional[int] = None  # that attempt's log (None: the latest run on the node)
    # From this byte on, whatever `lines` says (the queue host's copy taking up where
    # it stopped); past the end (the log was cut meanwhile): from its end.
    offset: Optional[int] = None


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
    `node_grace` the daemon runs them elsewhere."""

    lease: float


class RecoverQuery(msgspec.Struct, tag="recover_query", frozen=True):
    """What this node kept of jobs `job_ids` of queue `queue_id`, which queue.db has
    forgotten (a damaged WAL, an older backup restored): answered by `Recovered`."""

    req: int
    job_ids: list[int]
    queue_id: str = ""


DaemonMsg = (
    Union[Start, Kill, Ack, Tail, Unfollow, Sync, ArtifactsQuery, Owner, BlobData, ArtifactsTreeQuery, Heartbeat, RecoverQuery, RelayDown, ReadChunks, StageImage, ListImages]
)
