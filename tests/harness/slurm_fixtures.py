"""pytest fixtures around `tests.harness.slurm`.

* `slurm_cluster`: a fresh one-host Slurm cluster for the test, torn down after it,
  pass or fail. The test is skipped, with the reason printed, only where the daemons
  cannot start (packages missing, munged or slurmctld refusing to run).
* `slurm_login`: an sshd node acting as the cluster's login node: Slurm commands run
  over SSH there reach `slurm_cluster`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.slurm import SlurmCluster, SlurmUnavailable
from tests.harness.sshd import ClientKey, SshdNode, sshd_available


@pytest.fixture
def slurm_cluster() -> Iterator[SlurmCluster]:
    try:
        cluster = SlurmCluster.start()
    except SlurmUnavailable as exc:
        print(f"skipping: Slurm cannot start here: {exc}")
        pytest.skip(f"Slurm cannot start here: {str(exc).splitlines()[0]}")
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def slurm_login(
    tmp_path: Path, sshd_client_key: ClientKey, slurm_cluster: SlurmCluster
) -> Iterator[SshdNode]:
    if not sshd_available():
        pytest.skip("OpenSSH sshd is not installed (.ci/run installs openssh-server)")
    node = SshdNode(tmp_path / "login", sshd_client_key)
    try:
        slurm_cluster.login_node_env(node)
        node.start()
        yield node
    finally:
        node.close()
