"""The daemon's answers about Slurm clusters (`nvq cluster ...`), as the client
decodes them."""

from __future__ import annotations

import msgspec


class ClusterPilot(msgspec.Struct, kw_only=True):
    node: str  # hpc/81234
    job_id: str
    state: str  # Slurm's: PENDING, RUNNING, ...
    reason: str | None  # why Slurm holds it back
    time_left: float | None  # seconds its allocation has left
    host: str | None  # the compute node, once it runs


class ClusterView(msgspec.Struct, kw_only=True):
    name: str
    login: str  # host:port of the login node
    connected: bool
    error: str | None  # why the login node cannot be reached
    target: int | None  # `cluster scale N` (0 after `drain`); None: automatic
    refused: str | None  # Slurm's refusal, while no more pilots are requested
    demand: int  # new pilots the waiting jobs would fill
    # Jobs only a pilot could take, at the last pass, and the seconds until the first
    # of them has waited `scale_after` (None: none is still within it).
    waiting: int = 0
    request_in: float | None = None
    pilots: list[ClusterPilot]


class ClusterRetried(ClusterView, kw_only=True):
    """`ClusterRetry`: the cluster after the retry, and what it applied: config.toml is
    read again and the cluster's table, when it changed, taken (one line)."""

    applied: str
