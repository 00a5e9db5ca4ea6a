"""`nvq cluster status NAME` as a document: the login connection, the scaling mode,
and every pilot as Slurm last listed it."""

from __future__ import annotations

from typing import Any, Protocol

from nvq.clusters.config import ClusterConfig
from nvq.clusters.scaling import ScaleDecision, WaitingJob, request_in
from nvq.clusters.slurm import PilotStatus


class Viewed(Protocol):
    """What the view reads of a cluster's pilot manager (nvq.clusters.pilots), named
    here so the view does not import the manager that calls it."""

    cluster: ClusterConfig
    statuses: dict[str, PilotStatus]
    target: int | None
    refused: str | None
    last: ScaleDecision | None
    error: str | None
    waiting: list[WaitingJob]

    @property
    def login(self) -> object: ...


def cluster_view(m: Viewed, now: float) -> dict[str, Any]:
    return {
        "name": m.cluster.name,
        "login": f"{m.cluster.host}:{m.cluster.port}",
        "connected": m.login is not None,
        "error": m.error,
        "target": m.target,
        "refused": m.refused,
        "demand": m.last.demand if m.last else 0,
        "waiting": len(m.waiting),
        "request_in": request_in(m.waiting, m.cluster, now),
        "pilots": [
            {
                "node": f"{m.cluster.name}/{s.job_id}",
                "job_id": s.job_id,
                "state": s.state,
                "reason": s.reason,
                "time_left": s.time_left,
                "host": s.host,
            }
            for s in m.statuses.values()
        ],
    }
