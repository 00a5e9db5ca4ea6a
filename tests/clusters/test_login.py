"""Pilots through a real Slurm, reached over SSH on a login node: submit, see it run,
attach to its runner with `srun --overlap`, cancel; and a refused submission.

Pilots ask Slurm for one GPU where the test cluster has fake GRES ones, and for none
(`gpus_per_pilot = 0`) where it has no GRES; either way the runner inside gets its
cards from NVQ_FAKE_GPUS."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from nvq.clusters import slurm
from nvq.clusters.login import SlurmLogin, SubmitRefused, connect_login
from nvq.clusters.slurm import PilotStatus
from nvq.daemon.ssh import RunnerChannel
from nvq_runner.protocol import FrameReader, Hello, decode_runner_payload
from tests.harness.slurm import SlurmCluster
from tests.harness.slurm_fixtures import cluster_config
from tests.harness.sshd import SshdNode

pytestmark = pytest.mark.timeout(120)


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn, backend="asyncio")


async def wait_running(login: SlurmLogin, job_id: str) -> PilotStatus:
    with anyio.fail_after(60):
        while True:
            mine = [p for p in await login.pilots() if p.job_id == job_id]
            assert mine, f"pilot {job_id} left the queue"
            if mine[0].phase == "running":
                return mine[0]
            await anyio.sleep(0.2)


async def first_frame(login: SlurmLogin, job_id: str) -> Hello:
    """Attach until the runner answers: the pilot's runner may still be starting."""
    with anyio.fail_after(60):
        while True:
            chan: RunnerChannel = await login.open_pilot(
                job_id, slurm.pilot_home(login.cluster, job_id)
            )
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


def test_pilot_runs_and_its_runner_answers_through_srun(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(slurm_cluster, slurm_login, tmp_path)

    async def main() -> None:
        conn = await connect_login(config)
        try:
            login = SlurmLogin(config, conn)
            job_id = await login.submit()
            status = await wait_running(login, job_id)
            assert status.host == slurm_cluster.host
            assert status.time_left is not None and 0 < status.time_left <= 600

            hello = await first_frame(login, job_id)
            assert [g.name for g in hello.gpus] == ["A100"]
            assert hello.backend == "fake"

            await login.cancel([job_id])
            with anyio.fail_after(30):
                while any(p.job_id == job_id and p.phase != "ending" for p in await login.pilots()):
                    await anyio.sleep(0.2)
        finally:
            conn.close()

    run(main)


def test_refused_submission_carries_slurms_message(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> None:
    config = cluster_config(slurm_cluster, slurm_login, tmp_path, partition="nosuch")

    async def main() -> None:
        conn = await connect_login(config)
        try:
            login = SlurmLogin(config, conn)
            with pytest.raises(SubmitRefused, match="Invalid partition name specified"):
                await login.submit()
            assert await login.pilots() == []
        finally:
            conn.close()

    run(main)
