"""What placement asks of the wings above it, named here so that placement imports
none of them: the reassignment side (`nvq.daemon.machines.reassign.Reassigner`: who may
go where, fences, old attempts still stopping, preemption) and the Slurm pilot
managers (`nvq.daemon.machines.pilots.DaemonPilots`). `nvq.daemon.main` hands the
concrete ones in."""

from __future__ import annotations

from typing import Any, Protocol

from nvq.config.types import ClusterConfig
from nvq.daemon.core.held import Held
from nvq.daemon.core.nodes import NodeRuntime
from nvq.model import JobRecord, NodeView


class PilotNodes(Protocol):
    """What placement and the node views ask of the [[clusters]] pilot managers."""

    def after_placement(self) -> None: ...
    def slot_fields(self, node: str) -> dict[str, Any]: ...
    def may_fit(self, job: JobRecord) -> bool: ...
    def node_views(self, views: list[NodeView]) -> list[NodeView]: ...
    def reconfigure(self, clusters: list[ClusterConfig]) -> None: ...


class PlacementInputs(Protocol):
    # job → the borrowed node whose --max-runtime it ran out: avoided next time
    avoid: dict[int, str]

    @property
    def pilots(self) -> PilotNodes | None: ...

    def unplaceable(self) -> set[int]:
        """Jobs that may not be placed now (an old attempt stopping or syncing)."""
        ...

    def fenced(self, node: str) -> bool:
        """An old attempt that must be killed first may still run on `node`."""
        ...

    def slot_fields(self, node: NodeRuntime) -> dict[str, Any]:
        """NodeSlot's fields that come from outside placement (busy owner, pilot)."""
        ...

    def pending_fields(self, job: JobRecord) -> dict[str, Any]:
        """PendingJob's fields that come from outside placement (who, where not)."""
        ...

    async def preempt(
        self, held: Held, jobs: list[JobRecord], why: str, by: int | None = None
    ) -> list[JobRecord]: ...
