"""What a request handler works with: the state, and the services built around it
(`nvq.daemon.main` wires them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from nvq.daemon.artifacts.artifact_syncs import ArtifactSyncs
from nvq.daemon.artifacts.artifacts import Artifacts
from nvq.daemon.core.state import State
from nvq.daemon.machines.reassign import Reassigner
from nvq.daemon.machines.reload import Reloader
from nvq.daemon.ops import Ops
from nvq.daemon.placement.memory import Memory


@dataclass(frozen=True)
class Context:
    state: State
    machines: Reassigner  # reassignment, busy nodes, placement's inputs, the pilots
    ops: Ops  # alerts, notifier, backups
    memory: Memory  # placement's: the last pass (`job why`, `queue status`, lanes)
    artifacts: Artifacts  # how artifacts travel and where they are kept
    syncs: ArtifactSyncs  # the artifact work queue
    reloader: Reloader | None = None  # `daemon reload`, and what it could not apply
    # user → the blobs (files, manifests) they sent through the daemon (snapshot_intake)
    snapshots: dict[str, set[str]] = field(default_factory=dict)
