"""Slurm clusters as text: each cluster's state and its pilots."""

from __future__ import annotations

from nvq.cli.render.table import table
from nvq.values import format_duration

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the plain-wire path renders dicts (fields.py)
    from nvq.control import ClusterView


def cluster_text(view: ClusterView) -> str:
    mode = "automatic" if view.target is None else f"kept at {view.target}"
    if view.target == 0:
        mode = "draining"
    login = "connected" if view.connected else f"unreachable: {view.error or 'connecting'}"
    waiting = f"{view.waiting} job{'s' if view.waiting != 1 else ''} waiting for a pilot"
    if view.request_in is not None:
        waiting += f" (the next asks for one in {format_duration(view.request_in)}: scale_after)"
    lines = [
        f"cluster {view.name}: login {view.login} {login}; pilots {mode}; "
        f"{waiting}; new pilots they would fill: {view.demand}"
    ]
    if view.refused:
        lines.append(f"  requests stopped: {view.refused}")
    rows = [
        [
            p.node,
            p.state + (f" ({p.reason})" if p.reason else ""),
            p.host or "-",
            format_duration(p.time_left) if p.time_left is not None else "-",
        ]
        for p in view.pilots
    ]
    lines.append(table(["PILOT", "STATE", "HOST", "LEFT"], rows) if rows else "  no pilots")
    return "\n".join(lines)


def clusters_text(views: list[ClusterView]) -> str:
    return "\n\n".join(cluster_text(v) for v in views)
