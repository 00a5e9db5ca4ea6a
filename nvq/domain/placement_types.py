"""The placement function's inputs and outputs: what a node can hold, what a job asks,
what the pass decided. Pure data (see `nvq.domain.placement`)."""

from __future__ import annotations

import msgspec


class GpuSlot(msgspec.Struct, frozen=True):
    index: int
    total_mb: int
    foreign_mb: int  # memory of processes the queue did not start
    queue_mb: int  # Σ max(reserved, actual) of queue jobs on this card
    schedulable: bool = True  # False when outside the node's gpus allowlist
    # Out of placement for now (an unhealthy or drained card, domain/card_marks.py): no
    # job goes there, but it still counts for "could this job ever fit".
    out: bool = False
    # Utilisation (%) of the card while processes the queue did not start run there
    # (0: none do, or unknown): among cards that fit, quiet ones are taken first.
    foreign_util: int = 0


class NodeSlot(msgspec.Struct, frozen=True):
    name: str
    # Up and not drained. A non-accepting node still counts for "could ever fit".
    accepting: bool
    gpus: list[GpuSlot]
    cpu_jobs: int  # running CPU-only jobs
    running_jobs: int  # all queue jobs running there: the load
    cuda: tuple[int, int] | None = None  # driver's CUDA version; None = unknown or no driver
    memory_total_mb: int | None = None  # host RAM; None = unknown
    memory_free_mb: int | None = None  # host RAM not yet promised to queue jobs; None = unchecked
    busy: bool = False  # its owner is using it: only the owner's jobs, and only if no idle node
    owner: str | None = None
    # A Slurm pilot: a job's time limit plus the margin must fit in the time left, and
    # jobs without one go there only when the cluster allows untimed jobs.
    time_left: float | None = None  # None: the node has no end
    untimed_ok: bool = True
    time_margin: float = 0.0
    runtime: str = ""  # the container runtime image jobs run through; "": none


class PendingJob(msgspec.Struct, frozen=True):
    id: int
    priority: int
    created_at: float
    gpus: int
    vram_mb: int  # per card
    node: str | None = None  # node name prefix
    cuda: tuple[int, int] | None = None  # minimum driver CUDA version
    memory_mb: int = 0  # host RAM
    # A lane job: exactly this card of the node named `node` (exact name, not a prefix).
    gpu: int | None = None
    user: str = ""  # who submitted it: a busy node takes its owner's jobs only
    forbid_busy: bool = False  # the user forbade their jobs on their own busy node
    time_limit: float | None = None  # --timeout / --max-runtime: what a pilot must hold
    # Only these nodes (exact names): an in-place job's directory is only there.
    nodes: tuple[str, ...] | None = None
    # Whose usage it counts against (fair share): the OS user or the submitter label.
    account: str = ""
    image: bool = False  # runs in a container image: only nodes with a runtime
    # Reservations (nvq.domain.reservations): a `--reservation` job runs on these cards
    # (node, index) only; any job keeps off `closed` ones. Either set: the slower path.
    only: frozenset[tuple[str, int]] | None = None
    closed: frozenset[tuple[str, int]] = frozenset()


class Placement(msgspec.Struct, frozen=True):
    job_id: int
    node: str
    gpus: list[int]  # card indices, ascending; [] for a CPU job
    # Said when it had to take a card busy with work the queue did not start.
    note: str = ""


class Unschedulable(msgspec.Struct, frozen=True):
    job_id: int
    reason: str


class PlacementResult(msgspec.Struct, frozen=True):
    placements: list[Placement]
    unschedulable: list[Unschedulable]
