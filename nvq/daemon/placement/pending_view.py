"""A job as placement sees it (`PendingJob`), and the time it may run: shared by the
placement pass, the submit checks, reassignment and the Slurm pilots; and the nodes an
in-place job may go to."""

from __future__ import annotations

import os
from typing import Any

from nvq.config import Config
from nvq.domain import lanes
from nvq.domain.matching import parse_cuda
from nvq.domain.placement import PendingJob
from nvq.model import JobRecord


def to_pending(job: JobRecord, **extra: Any) -> PendingJob:
    """The job as placement sees it; `extra` fills the fields other modules own
    (who may use a busy node) without building the struct twice."""
    lane_node, lane_gpu = (None, None)
    if job.spec.lane is not None:
        lane_node, lane_gpu = lanes.parse_lane(job.spec.lane)
    return PendingJob(
        id=job.id,
        priority=job.spec.priority,
        created_at=job.rank,  # placement's order key: the dispatch sequence
        gpus=1 if lane_gpu is not None else job.spec.gpus,
        vram_mb=job.spec.vram_mb,
        node=lane_node if lane_node is not None else job.spec.node,
        cuda=parse_cuda(job.spec.cuda) if job.spec.cuda else None,
        memory_mb=job.spec.memory_mb,
        gpu=lane_gpu,
        time_limit=time_limit(job),
        image=job.spec.image is not None,
        quiet=job.spec.quiet,
        **extra,
    )


def time_limit(job: JobRecord) -> float | None:
    """The time a job may run (--timeout, --max-runtime): what a Slurm pilot's
    remaining walltime must hold."""
    limits = [t for t in (job.spec.timeout, job.spec.max_runtime) if t is not None]
    return min(limits) if limits else None


def in_place_nodes(config: Config, cwd: str | None) -> tuple[str, ...]:
    """The nodes where an in-place job's directory is the same directory: the local
    node when it exists on the queue host, and nodes whose `shared` prefixes cover it."""
    if cwd is None:
        return ()
    names: list[str] = []
    if config.queue.local_node and os.path.isdir(cwd):
        names.append(config.queue.local_node_name)
    for node in config.nodes:
        if any(cwd == p or cwd.startswith(p.rstrip("/") + "/") for p in node.shared):
            names.append(node.name)
    return tuple(names)
