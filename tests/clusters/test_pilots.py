"""PilotManager against a real Slurm through the sshd login node, with the daemon's
side played by a recording `PilotHooks`. Pilots are shaped as in
test_clusters_login (one fake GRES GPU where the test cluster has them)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from nvq.clusters.config import ClusterConfig
from nvq.clusters.login import SlurmLogin, connect_login
from nvq.clusters.pilot_hooks import PilotOpener
from nvq.clusters.pilot_starts import MAX_START_FAILURES, start_backoff
from nvq.clusters.pilots import PilotManager
from nvq.clusters.scaling import WaitingJob
from nvq.clusters.slurm import PilotStatus
from nvq.config import NodeConfig
from nvq_runner.protocol import FrameReader, Hello, decode_runner_payload
from tests.harness.slurm import SlurmCluster
from tests.harness.slurm_fixtures import cluster_config
from tests.harness.sshd import SshdNode

pytestmark = pytest.mark.timeout(120)


class Hooks:
    """Records what the manager tells the daemon, and answers its questions from
    fields a test sets."""

    def __init__(self) -> None:
        self.waiting: list[WaitingJob] = []
        self.idle: dict[str, float | None] = {}
        self.events: list[tuple[str, ...]] = []
        self.openers: dict[str, PilotOpener] = {}
        self.statuses: dict[str, PilotStatus] = {}
        self.changed = anyio.Event()

    def _note(self, *event: str) -> None:
        self.events.append(event)
        self.changed.set()
        self.changed = anyio.Event()

    def waiting_jobs(self, cluster: ClusterConfig) -> list[WaitingJob]:
        return list(self.waiting)

    def idle_since(self, name: str) -> float | None:
        return self.idle.get(name)

    async def pilot_started(self, node: NodeConfig, open_channel: PilotOpener) -> None:
        # placement reads a pilot node without a status as ending (daemon/machines/pilots.py)
        assert node.name in self.statuses, "a pilot's node came before its status"
        self.openers[node.name] = open_channel
        self._note("started", node.name)

    async def pilot_status(self, name: str, status: PilotStatus) -> None:
        self.statuses[name] = status

    async def pilot_ended(self, name: str, why: str) -> None:
        self._note("ended", name, why)

    async def submitted(self, cluster: ClusterConfig, job_id: str) -> None:
        self._note("submitted", f"{cluster.name}/{job_id}")

    async def alert(self, cluster: ClusterConfig, message: str) -> None:
        self._note("alert", message)

    async def until(self, kind: str, timeout: float = 60) -> tuple[str, ...]:
        with anyio.fail_after(timeout):
            while True:
                found = [e for e in self.events if e[0] == kind]
                if found:
                    return found[-1]
                await self.changed.wait()


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn, backend="asyncio")


def manager(config: ClusterConfig, hooks: Hooks, known: set[str] | None = None) -> PilotManager:
    return PilotManager(config, hooks, known=known, poll=0.2, poll_starting=0.2)


async def hello_through(open_channel: PilotOpener) -> Hello:
    with anyio.fail_after(60):
        while True:
            chan = await open_channel()
            try:
                frames = FrameReader()
                with contextlib.suppress(anyio.EndOfStream):
                    while data := await chan.receive():
                        for payload in frames.feed(data):
                            msg = decode_runner_payload(payload)
                            assert isinstance(msg, Hello)
                            return msg
            finally:
                await chan.aclose()
            await anyio.sleep(0.2)


def waiting_job(config: ClusterConfig, timeout: float | None = 60.0) -> WaitingJob:
    return WaitingJob(id=1, gpus=config.gpus_per_pilot, timeout=timeout, waiting_since=time.time())


def test_waiting_job_brings_a_pilot_that_is_released_when_idle(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(slurm_cluster, slurm_login, tmp_path, scale_after=0.0, idle_release=1.0)
    hooks = Hooks()
    hooks.waiting = [waiting_job(config)]

    async def main() -> None:
        pilots = manager(config, hooks)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pilots.run)
            _, name = await hooks.until("submitted")
            assert await hooks.until("started") == ("started", name)
            hello = await hello_through(hooks.openers[name])
            pilots.runner_up(name.removeprefix("hpc/"))  # what the daemon says on a Hello
            assert [g.name for g in hello.gpus] == ["A100"]
            assert hooks.statuses[name].phase == "running"
            assert pilots.view()["pilots"][0]["node"] == name

            # Its job ran elsewhere meanwhile: nothing waits, the pilot sits idle.
            hooks.waiting = []
            hooks.idle[name] = time.time()
            pilots.kick()
            assert await hooks.until("ended") == ("ended", name, "released: no job needed it")
            with anyio.fail_after(30):
                while slurm_cluster.job_state(name.split("/")[1]) not in ("", "COMPLETING"):
                    await anyio.sleep(0.2)
            tg.cancel_scope.cancel()
        assert [e[0] for e in hooks.events] == ["submitted", "started", "ended"]

    run(main)


def test_refused_submission_alerts_once_until_retry(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(
        slurm_cluster, slurm_login, tmp_path, partition="nosuch", scale_after=0.0
    )
    hooks = Hooks()
    hooks.waiting = [waiting_job(config)]

    async def main() -> None:
        pilots = manager(config, hooks)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pilots.run)
            _, message = await hooks.until("alert")
            assert message == (
                "cluster hpc: Slurm refused a pilot: Batch job submission failed: Invalid "
                "partition name specified (invalid partition specified: nosuch) (no more "
                "requests until the config changes or `nvq cluster retry hpc`)"
            )
            for _ in range(5):  # more passes, with the job still waiting
                assert pilots.login is not None
                await pilots.step()
            assert [e[0] for e in hooks.events] == ["alert"]
            assert pilots.view()["refused"] is not None

            pilots.retry()
            with anyio.fail_after(30):
                while len(hooks.events) < 2:
                    await hooks.changed.wait()
            assert [e[0] for e in hooks.events] == ["alert", "alert"]
            tg.cancel_scope.cancel()

    run(main)


def test_restarted_daemon_adopts_its_running_pilot_and_sees_scancel(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(slurm_cluster, slurm_login, tmp_path)
    hooks = Hooks()

    async def main() -> None:
        conn = await connect_login(config)
        try:
            job_id = await SlurmLogin(config, conn).submit()  # an earlier daemon's pilot
        finally:
            conn.close()
        # Adopted while running: a pending pilot nobody waits for would be cancelled.
        await anyio.to_thread.run_sync(slurm_cluster.wait_state, job_id, "RUNNING")
        stranger = slurm_cluster.run(
            "sbatch", "--parsable", "--job-name=nvq-hpc", "--wrap", "sleep 300"
        ).stdout.strip()  # same name, not ours: left alone
        name = f"hpc/{job_id}"
        hooks.idle[name] = None  # busy: it has a job on it

        pilots = manager(config, hooks, known={job_id})
        async with anyio.create_task_group() as tg:
            tg.start_soon(pilots.run)
            assert await hooks.until("started") == ("started", name)
            hello = await hello_through(hooks.openers[name])
            pilots.runner_up(job_id)
            assert hello.backend == "fake"

            slurm_cluster.run("scancel", job_id)
            assert await hooks.until("ended") == ("ended", name, "the Slurm allocation ended")
            tg.cancel_scope.cancel()
        assert [e[0] for e in hooks.events] == ["started", "ended"]
        assert slurm_cluster.job_state(stranger) in ("PENDING", "RUNNING")

    run(main)


def test_a_pilot_whose_sbatch_was_in_flight_at_a_drain_is_never_given_a_job(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(slurm_cluster, slurm_login, tmp_path, scale_after=0.0)
    hooks = Hooks()
    hooks.waiting = [waiting_job(config)]

    async def main() -> None:
        pilots = manager(config, hooks)
        submitted = hooks.submitted

        async def drain_meanwhile(cluster: ClusterConfig, job_id: str) -> None:
            await submitted(cluster, job_id)
            pilots.drain()  # `nvq cluster drain` while sbatch was answering

        hooks.submitted = drain_meanwhile  # type: ignore[method-assign]
        conn = await connect_login(config)
        try:
            pilots.login = SlurmLogin(config, conn)
            await pilots.step()
            _, name = await hooks.until("submitted")
            await anyio.to_thread.run_sync(
                slurm_cluster.wait_state, name.removeprefix("hpc/"), "RUNNING"
            )
            await pilots.step()  # it came up after the drain: given back, not started
        finally:
            conn.close()
        assert hooks.events == [
            ("submitted", name),
            ("ended", name, "released: the cluster is drained"),
        ]
        await anyio.to_thread.run_sync(slurm_cluster.wait_state, name.removeprefix("hpc/"), "")

    run(main)


class UnsharedLogin(SlurmLogin):
    """A login node that does not see what pilots write in their home."""

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster

    async def sees_pilot_home(self, home: str) -> bool:
        return False


def test_a_pilot_home_the_login_node_cannot_see_is_noted_without_an_alert(tmp_path: Path) -> None:
    # Files travel over the pilot's own link: an unshared home costs only a runner
    # install per compute node, which the log says once; nothing to alert anyone about.
    config = ClusterConfig(name="hpc", host="login", home="/scratch/nvq")
    hooks = Hooks()

    async def main() -> None:
        pilots = manager(config, hooks)
        pilots.login = UnsharedLogin(config)
        await pilots.check_home_shared("81234")
        assert hooks.events == []
        assert pilots.unshared is not None
        assert pilots.unshared.startswith(
            "cluster hpc: the login node does not see the pilots' home (/scratch/nvq)"
        )
        assert "installs the runner from its batch script" in pilots.unshared

    run(main)


def test_failed_starts_back_off_doubling_to_a_cap() -> None:
    assert [start_backoff(n) for n in (1, 2, 3, 4)] == [5.0, 10.0, 20.0, 40.0]
    assert start_backoff(30) == 300.0
    assert MAX_START_FAILURES == 3
