"""The cluster's login node: one SSH connection, over which nvq submits, lists and
cancels pilots and opens each pilot runner's channel (an `srun --overlap` step that
runs the pilot's `attach` script).

Failures of the connection are the transport's `NodeUnreachable` (the login node is
a node that went down). A submission Slurm refuses raises `SubmitRefused` with
Slurm's own message; squeue or scancel failing raises `SlurmError`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import asyncssh
import msgspec

from nvq.clusters import slurm
from nvq.clusters.config import ClusterConfig
from nvq.clusters.runner_bundle import RunnerBundle, install_lines, runner_bundle
from nvq.clusters.slurm import PilotStatus
from nvq.config import NodeConfig
from nvq.daemon.ssh import (
    NodeUnreachable,
    RunnerChannel,
    connect_node,
    open_runner_channel,
    run_command,
)
from nvq.daemon.ssh.bootstrap import bootstrap_node
from nvq.errors import Internal

log = logging.getLogger("nvq.clusters")

DEFAULT_PYTHON: str = next(
    f.default for f in msgspec.structs.fields(ClusterConfig) if f.name == "python"
)
COMMAND_TIMEOUT = 60.0  # sbatch and squeue answer in well under a second unless slurmctld is stuck


class SlurmError(Internal):
    """A Slurm command failed; the message is Slurm's, on one line."""


class SubmitRefused(SlurmError):
    """sbatch refused the pilot (bad partition or account, over a limit): asking again
    with the same config gets the same answer."""


def login_node(cluster: ClusterConfig) -> NodeConfig:
    """The login node as the SSH transport sees it (it names the cluster in errors)."""
    return NodeConfig(
        name=cluster.name,
        host=cluster.host,
        port=cluster.port,
        user=cluster.user,
        identity=cluster.identity,
        known_hosts=cluster.known_hosts,
        python=cluster.python,
        env=dict(cluster.env),
    )


def runner_install_node(cluster: ClusterConfig) -> NodeConfig | None:
    """Where nvq installs the pilots' runner, as bootstrap sees it: `<home>/runner` on
    the login node, which the compute nodes must see too (a site without a shared
    `home` names its own `python`), once per version; None when the cluster names its
    own `python` (the site manages nvq_runner there, as `python` does for a node)."""
    if cluster.python != DEFAULT_PYTHON:
        return None
    return msgspec.structs.replace(
        login_node(cluster), home=f"{cluster.home.rstrip('/')}/runner"
    )


@dataclass(frozen=True)
class PilotRunner:
    python: str  # <home>/runner/venv/bin/python, as the login node expands it
    bundle: RunnerBundle  # for compute nodes that do not see the login node's home


async def install_pilot_runner(
    conn: asyncssh.SSHClientConnection, cluster: ClusterConfig
) -> PilotRunner | None:
    """Install this version's runner for the pilots on the login node (once per
    version: an up-to-date install is only probed) and bundle it for the batch script;
    None when the cluster names its own `python`. Raises `BootstrapError` (a
    `NodeUnreachable`)."""
    node = runner_install_node(cluster)
    if node is None:
        return None
    result = await bootstrap_node(conn, node)
    if result.installed:
        log.info(
            "cluster %s: installed nvq_runner %s for its pilots in %.1fs (%s)",
            cluster.name,
            result.version,
            result.seconds,
            result.python,
        )
    return PilotRunner(result.python, await runner_bundle(conn, node))


def unshared_home(cluster: ClusterConfig, job_id: str) -> str:
    """What the log says when the login node cannot see what a pilot wrote in its home."""
    return (
        f"cluster {cluster.name}: the login node does not see the pilots' home "
        f"({cluster.home}) that pilot {job_id} wrote on its compute node: nothing needs "
        "it to (files travel over each pilot's link), but each compute node installs "
        "the runner from its batch script instead of using the login node's copy"
    )


def pilot_node(cluster: ClusterConfig, job_id: str, home: str | None = None) -> NodeConfig:
    """The pilot as a node: `hpc/81234`, its runner home in the allocation (`home`:
    the one it was submitted with, when `cluster`'s has changed since)."""
    return NodeConfig(
        name=f"{cluster.name}/{job_id}",
        host=cluster.host,
        port=cluster.port,
        user=cluster.user,
        identity=cluster.identity,
        known_hosts=cluster.known_hosts,
        home=home or slurm.pilot_home(cluster, job_id),
        python=cluster.python,
        env=dict(cluster.env),
    )


def pilot_job_id(name: str) -> str:
    """The Slurm job id of the pilot node `name` (`pilot_node` names it `<cluster>/<id>`)."""
    return name.rpartition("/")[2]


async def connect_login(
    cluster: ClusterConfig, *, connect_timeout: float = 10, keepalive_interval: float = 5
) -> asyncssh.SSHClientConnection:
    return await connect_node(
        login_node(cluster),
        connect_timeout=connect_timeout,
        keepalive_interval=keepalive_interval,
    )


class SlurmLogin:
    """Slurm commands for one cluster over an open login connection (owned by the caller)."""

    def __init__(
        self,
        cluster: ClusterConfig,
        conn: asyncssh.SSHClientConnection,
        *,
        timeout: float = COMMAND_TIMEOUT,
    ) -> None:
        self.cluster = cluster
        self.conn = conn
        self.timeout = timeout
        self.node = login_node(cluster)
        self.runner: PilotRunner | None = None  # the runner nvq installed for the pilots

    async def _run(self, command: str, input: str | None = None) -> tuple[int, str, str]:
        return await run_command(
            self.conn, command, timeout=self.timeout, node=self.node, input=input
        )

    async def submit(self) -> str:
        """Submit one pilot; its Slurm job id."""
        runner = self.runner
        script = slurm.pilot_script(
            self.cluster,
            runner.python if runner else None,
            install_lines(runner.bundle) if runner else (),
        )
        code, out, err = await self._run(slurm.sbatch_command(self.cluster), input=script)
        if code != 0:
            raise SubmitRefused(slurm.sbatch_error(err, code))
        try:
            return slurm.parse_sbatch(out)
        except ValueError as exc:
            raise SlurmError(str(exc)) from None

    async def pilots(self) -> list[PilotStatus]:
        """This cluster's pilots that Slurm still knows, pending, running or ending."""
        code, out, err = await self._run(slurm.squeue_command(self.cluster))
        if code != 0:
            raise SlurmError(f"squeue failed: {_one_line(err) or f'exit status {code}'}")
        try:
            return slurm.parse_squeue(out)
        except ValueError as exc:
            raise SlurmError(str(exc)) from None

    async def cancel(self, job_ids: list[str]) -> None:
        if not job_ids:
            return
        code, _, err = await self._run(slurm.scancel_command(job_ids))
        # scancel of a job that already ended is not an error worth raising.
        if code != 0 and "Invalid job id" not in err:
            raise SlurmError(f"scancel failed: {_one_line(err) or f'exit status {code}'}")

    async def end_reason(self, job_id: str, home: str | None) -> str | None:
        """Why an ended pilot ended, as best known on the login node: its batch log's
        last lines where the login node sees the compute node's `home`, else what the
        script left in the job's Comment, else Slurm's record (`Slurm says FAILED,
        exit code 1:0 …`); None when there is none."""
        _, log, _ = await self._run(slurm.log_command(home)) if home else (0, "", "")
        said = slurm.output_tail(log)
        if said:
            return said
        code, out, _ = await self._run(slurm.end_command(job_id))
        if code != 0:
            return None
        recorded = slurm.parse_end(out)
        return slurm.parse_said(out) or (f"Slurm says {recorded}" if recorded else None)

    async def sees_pilot_home(self, home: str) -> bool:
        """Does the login node see the files a running pilot wrote in its home on the
        compute node (its `attach` script)? Only where the two share a file system."""
        code, _, _ = await self._run(f"test -e {slurm.shell_path(home + '/attach')}")
        return code == 0

    async def unshared_note(self, job_id: str, home: str) -> str | None:
        """Once a pilot's runner answers: what the log says where the login node does
        not see the pilot's home (nothing needs it to, files travel over the pilot's
        link, but compute nodes then install the runner themselves); None where it
        does, or where the login node could not be asked."""
        try:
            shared = await self.sees_pilot_home(home)
        except (NodeUnreachable, asyncssh.Error, OSError):
            return None
        return None if shared else unshared_home(self.cluster, job_id)

    async def open_pilot(self, job_id: str, home: str) -> RunnerChannel:
        """A channel to the pilot's runner (what a link's opener returns) in `home`,
        its `pilot_home` as it was submitted: a reload may have changed the cluster's
        `home` since."""
        return await open_runner_channel(
            self.conn,
            pilot_node(self.cluster, job_id, home),
            command=slurm.attach_command(job_id, home),
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
