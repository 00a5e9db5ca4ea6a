"""The frames the daemon sends a runner to start and to stop an attempt, built from
the job's record and the queue's settings."""

from __future__ import annotations

from typing import Literal

from nvq.config import Config, NodeConfig
from nvq.domain import job_signal
from nvq.home import queue_owner
from nvq.model import JobRecord, Reap
from nvq_runner import protocol as p


def is_local(config: Config, node: str) -> bool:
    return config.queue.local_node and node == config.queue.local_node_name


def node_env(config: Config, node: str) -> dict[str, str]:
    """`[[nodes]] env` (the local node's `[queue] local_env`)."""
    if is_local(config, node):
        return dict(config.queue.local_env)
    for cfg in config.nodes:
        if cfg.name == node:
            return dict(cfg.env)
    return {}


def node_config(config: Config, node: str) -> NodeConfig | None:
    if is_local(config, node):
        return None
    return next((cfg for cfg in config.nodes if cfg.name == node), None)


def merged_setup(node_setup: str | None, job_setup: str | None) -> str:
    """`[[nodes]] setup` first, then the job's `--setup`, as one command (one cache
    key): the job's runs only if the node's succeeded, in the same shell, so what the
    node's step sets up (a module, a PATH) is there for the job's."""
    if not node_setup:
        return job_setup or ""
    if not job_setup:
        return node_setup
    return f"{{ {node_setup}\n}} && {{ {job_setup}\n}}"


# Reap reasons of a job that will run again (nvq.domain.reassign, nvq.domain.move).
STOP_WITH_SIGNAL = frozenset({"preempted", "moved"})


def start_msg(job: JobRecord, *, config: Config, queue_id: str) -> p.Start:
    assert job.node is not None
    queue = config.queue
    node = node_config(config, job.node)
    mode: Literal["runner", "local", "remote"] = "runner"
    extra: dict[str, str] = {}
    if job.spec.env_captured is not None:
        mode = "local" if is_local(config, job.node) else "remote"
        extra = node_env(config, job.node)
    sig, before = job_signal.number(job.spec.signal)
    return p.Start(
        job_id=job.id,
        attempt=job.attempt,
        node=job.node,
        name=job.spec.name,
        command=job.spec.command,
        gpus=list(job.gpus),
        env=dict(job.spec.env),
        # an in-place job runs in its submit directory itself
        workdir=job.spec.cwd if job.spec.in_place else job.spec.workdir,
        timeout=job.spec.timeout,
        kill_grace=queue.kill_grace,
        signal=sig,
        signal_before=before,
        memory_mb=job.spec.memory_mb or None,
        # Another user's job runs as them (the control server let the submit in only
        # if the daemon can switch user); the queue owner's runs as the runner.
        user="" if job.user == queue_owner() else job.user,
        # An attempt dispatched before attempts had nonces keeps its plain directory.
        queue_id=queue_id if job.nonce else "",
        nonce=job.nonce,
        max_result=queue.max_result,
        max_log_size=queue.max_log_size,
        manifest_id=job.spec.manifest_id or "",
        subdir=job.spec.subdir,
        env_mode=mode,
        env_captured=dict(job.spec.env_captured or {}),
        node_env=extra,
        setup=merged_setup(node.setup if node else None, job.spec.setup),
        setup_files=list(job.spec.setup_files),
        cache_size=(node.cache_size or 0) if node else 0,
        reassign=not job.spec.no_reassign,
        interactive=job.spec.interactive,
        image=job.spec.image or "",
        image_manifest=job.spec.image_manifest or "",
        image_id=job.spec.image_id or "",
        runtime=(node.runtime or "") if node else "",
        relay=True,  # nvq.daemon.sessions.relay serves its $NVQ_SOCKET
    )


def stop_signal(job: JobRecord | None, reap: Reap) -> int:
    """What a job stopped to run again later (preempted, moved) is sent instead of
    SIGTERM: its `--signal`, so it can checkpoint; 0 (SIGTERM) for every other kill."""
    if job is None or reap.reason not in STOP_WITH_SIGNAL:
        return 0
    return job_signal.number(job.spec.signal)[0]


def kill_msg(
    reap: Reap, *, kill_grace: float, queue_id: str = "", nonce: str = "", signal: int = 0
) -> p.Kill:
    """A kill naming the attempt's identity when the queue knows it (an orphan the
    runner reported has none: the runner then ends its newest attempt of that id)."""
    return p.Kill(
        reap.job_id,
        reap.attempt,
        reason=reap.reason,
        grace=kill_grace,
        queue_id=queue_id if nonce else "",
        nonce=nonce,
        signal=signal,
    )
