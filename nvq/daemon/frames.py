"""The frames the daemon sends a runner to start and to stop an attempt, built from
the job's record and the queue's settings."""

from __future__ import annotations

from nvq.config import QueueConfig
from nvq.home import queue_owner
from nvq.model import Job, Reap
from nvq_runner import protocol as p


def start_msg(job: Job, *, queue: QueueConfig, queue_id: str) -> p.Start:
    assert job.node is not None
    return p.Start(
        job_id=job.id,
        attempt=job.attempt,
        node=job.node,
        name=job.name,
        command=job.command,
        gpus=list(job.gpus),
        env=dict(job.env),
        workdir=job.workdir,
        timeout=job.timeout,
        kill_grace=queue.kill_grace,
        memory_mb=job.memory_mb or None,
        # Another user's job runs as them (the control server let the submit in only
        # if the daemon can switch user); the queue owner's runs as the runner.
        user="" if job.user == queue_owner() else job.user,
        # An attempt dispatched before attempts had nonces keeps its plain directory.
        queue_id=queue_id if job.nonce else "",
        nonce=job.nonce,
        max_result=queue.max_result,
        max_log_size=queue.max_log_size,
    )


def kill_msg(reap: Reap, *, kill_grace: float, queue_id: str = "", nonce: str = "") -> p.Kill:
    """A kill naming the attempt's identity when the queue knows it (an orphan the
    runner reported has none: the runner then ends its newest attempt of that id)."""
    return p.Kill(
        reap.job_id,
        reap.attempt,
        reason=reap.reason,
        grace=kill_grace,
        queue_id=queue_id if nonce else "",
        nonce=nonce,
    )
