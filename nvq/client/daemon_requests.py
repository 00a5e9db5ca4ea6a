"""The clients' requests about the daemon and the node runners: ping, stop, reload,
a runner's status, restart and stop, images staged on nodes."""

from __future__ import annotations

from collections.abc import Sequence

from nvq import control as c
from nvq.client.calls import Requesting, returns


class DaemonRequests(Requesting):
    """Requests about the daemon and its runners (`nvq daemon …`, `nvq node …`, `nvq image …`)."""

    @returns(c.Ping, c.Pong)
    def ping(self) -> c.Request:
        return c.Ping()

    @returns(c.StopDaemon, c.DaemonStopping)
    def stop_daemon(self, *, planned: bool = True) -> c.Request:
        """Ask the daemon to exit; jobs (and their runners: it says how many) keep running.
        A planned stop stays stopped (`nvq daemon start` ends it); `planned=False`: one
        that a keeper may undo (a restore's)."""
        return c.StopDaemon(planned=planned)

    @returns(c.Reload, c.Reloaded)
    def reload(self) -> c.Request:
        """Re-read config.toml: nodes added, removed (drained) or changed, limits, ..."""
        return c.Reload()

    @returns(c.NodeStatus, c.RunnerStatus)
    def node_status(self, node: str) -> c.Request:
        """Whether the node's runner is up: pid, version, uptime, jobs, journal, error."""
        return c.NodeStatus(node=node)

    @returns(c.NodeRestart, c.RunnerStatus)
    def node_restart(self, node: str) -> c.Request:
        """Restart the node's runner; its jobs run on and the new runner adopts them."""
        return c.NodeRestart(node=node)

    @returns(c.ImagePush, c.ImagesPushed)
    def image_push(
        self, image: str, image_manifest: str, *, image_id: str = "", size: int = 0,
        nodes: Sequence[str] = (),
    ) -> c.Request:
        """Stage an image, saved into the queue's blob store, on nodes (all: none named)."""
        return c.ImagePush(image=image, image_manifest=image_manifest, image_id=image_id,
                           size=size, nodes=list(nodes))

    @returns(c.ImageList, list[c.NodeCache])
    def image_list(self) -> c.Request:
        """Each node's runtime store, as its runner lists it now."""
        return c.ImageList()

    @returns(c.NodeStop, c.NodesStopped)
    def node_stop(
        self, node: str | None = None, *, all: bool = False, kill_jobs: bool = False
    ) -> c.Request:
        return c.NodeStop(node=node, all=all, kill_jobs=kill_jobs)
