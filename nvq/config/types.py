"""The typed configuration: what `nvq.config.reader` builds from config.toml."""

from __future__ import annotations

from pathlib import Path

import msgspec

from nvq.errors import BadInput


class ConfigError(BadInput):
    """A malformed config: the message names the file, the key and the problem."""


class JumpHost(msgspec.Struct, kw_only=True, frozen=True):
    """One SSH hop on the way to a node (`[[nodes]] jump`): a bastion or gateway."""

    host: str
    port: int = 22
    user: str | None = None
    identity: str | None = None  # private key file (the node's, unless a node named)
    known_hosts: str | None = None  # the node's, unless the hop is a node named


class NodeConfig(msgspec.Struct, kw_only=True, frozen=True):
    name: str
    host: str
    port: int = 22
    user: str | None = None
    identity: str | None = None  # private key file
    known_hosts: str | None = None  # file; None means ~/.ssh/known_hosts
    home: str = "~/.nvq"  # node-side state directory
    python: str = "python3"  # interpreter on the node with nvq_runner importable
    gpus: list[int] | None = None  # allowlist for new placements; [] = CPU jobs only
    env: dict[str, str] = {}  # extra environment for the runner
    owner: str | None = None
    # directories this node sees as the queue host does (NFS): in-place jobs may run here
    shared: list[str] = []
    # run on this node before every job's own --setup, cached with it (setup_env.py)
    setup: str | None = None
    # bytes the node's snapshot blob cache may hold before least recently used go
    cache_size: int | None = None
    # mount a reassigned job's previous artifacts on demand (FUSE); false: restore
    # them in full before the job starts
    lazy_artifacts: bool = True
    # the container runtime image jobs run through (podman, docker, apptainer); None:
    # the first the node's runner finds
    runtime: str | None = None
    # reached through these SSH hosts: "user@bastion:22" (several: comma-separated, the
    # first first) or the name of another [[nodes]] entry; `hops` is that resolved
    jump: str | None = None
    hops: list[JumpHost] = []


class QueueConfig(msgspec.Struct, kw_only=True, frozen=True):
    local_node: bool = True
    local_node_name: str = "local"
    local_home: str | None = None  # runner home of the local node; default $NVQ_HOME/node
    local_gpus: list[int] | None = None
    local_env: dict[str, str] = {}
    headroom_mb: int = 512
    max_cpu_jobs_per_node: int = 4
    kill_grace: float = 10.0  # seconds between SIGTERM and SIGKILL
    node_grace: float = 120.0  # seconds unreachable before node_down
    # Seconds a runner may go without a word from the daemon before it stops its
    # reassignable jobs itself (nvq.config.lease): None derives it from node_grace,
    # 0 is "off".
    lease: float | None = None
    # The lease `daemon stop` grants every runner it reaches, so that planned
    # downtime (an upgrade, the queue host's reboot) stops no job. An hour: a kernel
    # update's reboot or a disk move fits with room (HTCondor's job lease is 40 min);
    # it is also how long a node that dies meanwhile keeps its jobs from moving.
    max_downtime: float = 3600.0
    # A dead or hung node is noticed after about 3 missed keepalives.
    ssh_keepalive: float = 5.0
    ssh_connect_timeout: float = 10.0
    # Users who may pause, resume, cancel and re-prioritise anyone's jobs, and run
    # queue-wide operations; the OS user the daemon runs as always may.
    admins: list[str] = []
    # The OS group whose members may use this queue (its socket becomes 0660 with that
    # group); None: only the queue's owner can connect.
    members_group: str | None = None
    # What a member may read of another user's job: "metadata" (state, node, name,
    # times, as squeue shows) or "all" (also its environment, logs, result and files;
    # secret-looking values stay hidden, `--reveal` is still the owner's and admins').
    members_read: str = "metadata"
    # Directories besides $NVQ_HOME/backups (and [queue.backup] directory) that
    # `queue backup PATH` may write into.
    backup_dirs: list[str] = []
    # A head-of-queue job waiting longer than this reserves a node (no starvation).
    starvation_after: float = 600.0
    # `job shell` sessions idle this long (no keystroke, no card activity) are warned
    # in their terminal, and ended `interactive_grace` later; 0: never.
    interactive_idle: float = 3600.0
    interactive_grace: float = 600.0
    # Who may keep a session past its idle release (`job shell --no-idle-release`).
    interactive_keep: str = "anyone"  # or "admins"
    # Machines that come and go (issue 5): how often a running job's $NVQ_ARTIFACTS
    # is copied to the queue host, the most those copies may hold, and how long an
    # owner's terminal may sit idle before their node stops counting as busy.
    artifact_sync: float = 60.0
    artifacts_quota_mb: int = 50 * 1024
    busy_idle: float = 600.0
    # What a job's output may cost (bytes): a result.json over `max_result` stays on
    # its node, each log is cut past `max_log_size` (and so are the node's record of
    # the order its two streams were written in, and the queue host's copy
    # of each attempt's output, in $NVQ_HOME/logs), `job logs` sends at most
    # `max_log_tail` of a log's end.
    max_result: int = 1024 * 1024
    max_log_size: int = 10 * 1024**3
    max_log_tail: int = 8 * 1024 * 1024
    # Sharing a lab: among jobs of equal priority the account that used least lately
    # goes first; usage halves every `fair_share_halflife` seconds; an account is the
    # OS user or ("submitter") the NVQ_SUBMITTER label.
    fair_share: bool = True
    fair_share_halflife: float = 86400.0
    fair_share_by: str = "user"
    # A waiting job that cannot be placed may stop running `--preemptible` jobs of a
    # lower priority (nvq.domain.preemption); false: never.
    preempt: bool = True
    # A GPU job without --vram holds its cards whole (as Slurm gives whole GPUs): no
    # other queue job goes on them while it runs. true: such jobs share cards with
    # others, reserving no memory (nvq.domain.card_share).
    share_cards: bool = False


class RemoteConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[remote]`: the CLI forwards its argv over SSH to `nvq` on this queue host."""

    host: str
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    nvq: str = "nvq"  # the command to run there
    home: str | None = None  # $NVQ_HOME there, when not the default
    jump: str | None = None  # "user@bastion:22": one hop, with this identity/known_hosts
    # how long the shared ssh connection idles before it closes; 0: each call logs in
    keep_connection: float = 300.0


class BackupConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[queue.backup]`: the daemon snapshots queue.db every `interval_hours`."""

    enabled: bool = False
    interval_hours: float = 24.0
    keep: int = 7  # newest snapshots kept in `directory`; older ones are deleted
    directory: str | None = None  # default $NVQ_HOME/backups


class EmailChannel(msgspec.Struct, kw_only=True, frozen=True):
    host: str
    port: int | None = None  # default: 465 with tls, 587 with starttls, 25 with none
    security: str = "starttls"  # "starttls" | "tls" | "none"
    user: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    sender: str  # `from` in the file
    to: list[str] = []  # alerts go here; job e-mails fall back to it
    alerts: bool = True  # e-mail alerts too (not only job outcomes)


# What a webhook may be told of: alerts, a job's start, its end (any), its bad end,
# and 80 % of its --timeout gone.
WEBHOOK_EVENTS = ("alert", "start", "end", "fail", "time-limit-80")
WEBHOOK_FORMATS = ("json", "slack", "matrix", "ntfy")


class WebhookChannel(msgspec.Struct, kw_only=True, frozen=True):
    """`[notify.webhook]` (or `[[notify.webhook]]`, several): an HTTP endpoint."""

    url: str
    format: str = "json"  # one of WEBHOOK_FORMATS: the body the endpoint expects
    events: list[str] = msgspec.field(default_factory=lambda: ["alert", "fail"])
    users: list[str] = []  # only these users' jobs (OS user or submitter label); [] = all
    headers: dict[str, str] = {}  # e.g. Authorization = "Bearer ..."
    timeout: float = 30.0


class NotifyConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[notify]`: where alerts and job outcomes are delivered (see nvq.notify)."""

    email: EmailChannel | None = None
    command: list[str] | None = None  # `[notify.command] run`: gets the alert JSON on stdin
    file: str | None = None  # `[notify.file]`: JSON lines; "" = $NVQ_HOME/alerts.log, None = off
    desktop: bool = False  # `[notify.desktop]`: notify-send, where present
    webhooks: list[WebhookChannel] = []  # `[notify.webhook]`: Slack, Matrix, ntfy, JSON
    severity: str = "warning"  # alerts at or above this are delivered
    email_on_success: bool = False  # per-job defaults of --email-on-success/--email-on-failure
    email_on_failure: bool = False
    retry_initial: float = 10.0  # seconds before a failed delivery is retried, doubling
    retry_max: float = 3600.0


class Limits(msgspec.Struct, kw_only=True, frozen=True):
    """What one account may hold (`[limits]` defaults, `[users.NAME]` overrides);
    None: no limit."""

    max_running_gpus: int | None = None
    max_running_jobs: int | None = None
    max_queued_jobs: int | None = None  # pending, held and paused: a submit over it is refused
    max_gpu_hours: float | None = None  # GPU-hours per rolling day
    # The highest priority this user's jobs preempt other users' jobs with (their own
    # they preempt at any priority); None: their --priority as given.
    max_preempt_priority: int | None = None


class LimitsConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[limits]`: the defaults, and whether the queue's admins are bound by them."""

    defaults: Limits = Limits()
    exempt_admins: bool = False


class UserConfig(msgspec.Struct, kw_only=True, frozen=True):
    email: str | None = None
    share: float = 1.0  # fair share: usage is divided by it
    limits: Limits = Limits()  # [limits], with the keys this table gives replaced


class SubmitConfig(msgspec.Struct, kw_only=True, frozen=True):
    """`[submit]`: what `nvq job submit` takes with a job by default."""

    env_exclude: list[str] = []  # names or glob patterns never captured
    max_snapshot: int = 512 * 1024 * 1024  # bytes
    in_place: bool = False  # run in the submit directory itself, no snapshot


class ClusterConfig(msgspec.Struct, kw_only=True, frozen=True):
    """A `[[clusters]]` table: a Slurm login node reached over SSH like a node, what
    each pilot job asks Slurm for, and how the pilots scale."""

    name: str
    host: str  # the login node
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    partition: str | None = None  # None: the cluster's default partition
    gpus_per_pilot: int = 1  # → --gres=gpu:N (see gres, gpus_flag); 0 asks for no GPUs
    gres: str = "gpu"  # "gpu", or a typed one: "gpu:a100" → --gres=gpu:a100:N
    gpus_flag: str = "--gres"  # or "--gpus" / "--gpus-per-node": how cards are asked for
    cpus: int | None = None  # → --cpus-per-task
    memory_mb: int | None = None  # → --mem
    time: float | None = None  # walltime in seconds; None: the partition's default
    account: str | None = None
    qos: str | None = None
    sbatch_args: list[str] = []  # passed to sbatch as they are
    min_pilots: int = 0
    max_pilots: int = 1
    scale_after: float = 30.0  # seconds a fitting job waits before a pilot is requested
    idle_release: float = 600.0  # seconds a pilot may stay idle before it is cancelled
    python: str = "python3"  # on the compute nodes, with nvq_runner importable
    env: dict[str, str] = {}  # extra environment for the pilot's runner
    setup: list[str] = []  # shell lines run before the runner, e.g. "module load cuda"
    allow_untimed: bool = False  # may jobs without a time limit run on pilots?
    vacate_before: float = 300.0  # untimed jobs leave this long before the allocation ends
    home: str = "~/.nvq/pilots"  # pilot runner homes: <home>/<job id>, on the cluster


class Config(msgspec.Struct, kw_only=True, frozen=True):
    path: Path | None = None
    read_stamp: tuple[int, int] | None = None  # config.toml's (mtime ns, size) when read
    queue: QueueConfig = QueueConfig()
    nodes: list[NodeConfig] = []
    remote: RemoteConfig | None = None
    backup: BackupConfig = BackupConfig()  # `[queue.backup]` in the file
    notify: NotifyConfig = NotifyConfig()
    users: dict[str, UserConfig] = {}
    limits: LimitsConfig = LimitsConfig()
    clusters: list[ClusterConfig] = []  # [[clusters]]: Slurm clusters, through pilot jobs
    submit: SubmitConfig = SubmitConfig()
