"""What a cluster's `PilotManager` needs from the daemon (`nvq.daemon.machines.pilots` provides
it), so that the manager knows nothing of the daemon's state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from nvq.clusters.config import ClusterConfig
from nvq.clusters.scaling import WaitingJob
from nvq.clusters.slurm import PilotStatus
from nvq.config import NodeConfig
from nvq.daemon.ssh import RunnerChannel

PilotOpener = Callable[[], Awaitable[RunnerChannel]]


class PilotHooks(Protocol):
    """What the manager needs from the daemon. Names are pilot node names, `hpc/81234`."""

    def waiting_jobs(self, cluster: ClusterConfig) -> list[WaitingJob]:
        """Pending jobs that no existing node (pilots included) can take now."""
        ...

    def idle_since(self, name: str) -> float | None:
        """When the pilot's node last ran nothing (since it came up, if it never ran a
        job); None while it runs jobs or is not connected yet."""
        ...

    async def pilot_started(self, node: NodeConfig, open_channel: PilotOpener) -> None:
        """Add the node and start its link with `open_channel`."""
        ...

    async def pilot_status(self, name: str, status: PilotStatus) -> None:
        """Slurm's view of the pilot: requested with its reason, or the time it has left."""
        ...

    async def pilot_ended(self, name: str, why: str) -> None:
        """The allocation is gone (or going): stop the link and treat the node as down
        now. Also said of a pilot that never started (cancelled while pending)."""
        ...

    async def submitted(self, cluster: ClusterConfig, job_id: str) -> None:
        """Record the id (durably) so a restarted daemon adopts the pilot."""
        ...

    async def alert(self, cluster: ClusterConfig, message: str) -> None:
        """One alert: Slurm refused a pilot (its message)."""
        ...
