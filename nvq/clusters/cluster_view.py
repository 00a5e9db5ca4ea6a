"""`nvq cluster status NAME` as a document: the login connection, the scaling mode,
and every pilot as Slurm last listed it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nvq.clusters.scaling import request_in

if TYPE_CHECKING:
    from nvq.clusters.pilots import PilotManager


def cluster_view(m: PilotManager, now: float) -> dict[str, Any]:
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
