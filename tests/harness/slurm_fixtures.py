"""pytest fixtures around `tests.harness.slurm`.

* `slurm_cluster`: a fresh one-host Slurm cluster for the test, torn down after it,
  pass or fail, with two fake GRES GPUs where device nodes can be made (else none:
  `cluster.gpus` says which). The test is skipped, with the reason printed, only
  where the daemons cannot start (packages missing, munged or slurmctld refusing).
* `slurm_login`: an sshd node acting as the cluster's login node: Slurm commands run
  over SSH there reach `slurm_cluster`.
* `cluster_queue`: makes the test's queue, whose only capacity is `slurm_cluster`
  (cluster "hpc" through `slurm_login`), and shuts it down after the test.
* `site_slurm`: one cluster shared by the tests that ask for it (started once per
  worker, emptied between tests) shaped like a site that does not share the login
  node's disk: four fake GRES GPUs, slurmd in a mount namespace of its own
  (`private_compute`), `site_queue` the queue over it, whose pilots' `home` is a
  directory the compute node does not see. Counting `sbatch_calls()` and
  `job_steps()` before and after a test gives what it asked of Slurm.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nvq.clusters.config import ClusterConfig
from tests.cluster import Nvq, make_nvq
from tests.harness.slurm import SlurmCluster, SlurmUnavailable
from tests.harness.sshd import ClientKey, SshdNode, sshd_available


@pytest.fixture
def slurm_cluster() -> Iterator[SlurmCluster]:
    try:
        try:
            cluster = SlurmCluster.start(gpus=2)
        except SlurmUnavailable as exc:
            if "fake GPU" not in str(exc):
                raise
            print(f"Slurm without GRES: {exc}")
            cluster = SlurmCluster.start()
    except SlurmUnavailable as exc:
        print(f"skipping: Slurm cannot start here: {exc}")
        pytest.skip(f"Slurm cannot start here: {str(exc).splitlines()[0]}")
    try:
        yield cluster
    finally:
        cluster.close()


def _login_node(tmp_path: Path, key: ClientKey, cluster: SlurmCluster) -> Iterator[SshdNode]:
    if not sshd_available():
        pytest.skip("OpenSSH sshd is not installed (`make parts` installs openssh-server)")
    node = SshdNode(tmp_path / "login", key)
    try:
        cluster.login_node_env(node)
        node.start()
        yield node
    finally:
        node.close()


@pytest.fixture
def slurm_login(
    tmp_path: Path, sshd_client_key: ClientKey, slurm_cluster: SlurmCluster
) -> Iterator[SshdNode]:
    yield from _login_node(tmp_path, sshd_client_key, slurm_cluster)


# The pilot runner's cards (the fake backend), whatever Slurm hands out.
FAKE_GPUS = """\
cuda = "12.4"
[[gpu]]
name = "A100"
memory = "80GiB"
"""


def cluster_config(
    slurm: SlurmCluster, login: SshdNode, tmp_path: Path, **overrides: object
) -> ClusterConfig:
    """A `[[clusters]]` entry for the test cluster through `login`: one pilot GPU where
    Slurm has fake GRES ones, this interpreter as the pilot's python, runner homes
    under `tmp_path`."""
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(FAKE_GPUS)
    fields: dict[str, object] = {
        "name": "hpc",
        "host": login.host,
        "port": login.port,
        "user": login.user,
        "identity": str(login.identity),
        "known_hosts": str(login.known_hosts),
        "gpus_per_pilot": min(1, slurm.gpus),
        "time": 600.0,
        "vacate_before": 60.0,
        "python": sys.executable,
        "env": {"NVQ_FAKE_GPUS": str(gpus)},
        "home": str(tmp_path / "pilots"),
    }
    fields.update(overrides)
    return ClusterConfig(**fields)  # type: ignore[arg-type]


def toml_str(value: object) -> str:
    return json.dumps(str(value))  # a JSON string is a TOML basic string


def write_cluster_queue_config(
    nvq: Nvq, slurm: SlurmCluster, login: SshdNode, tmp_path: Path, **settings: str
) -> None:
    """A queue with no node of its own and one cluster; `settings` replace entries of
    the `[[clusters]]` table (values as TOML text)."""
    gpus = tmp_path / "pilot-gpus.toml"
    gpus.write_text(FAKE_GPUS)
    table = {
        "name": toml_str("hpc"),
        "host": toml_str(login.host),
        "port": str(login.port),
        "user": toml_str(login.user),
        "identity": toml_str(login.identity),
        "known_hosts": toml_str(login.known_hosts),
        "gpus_per_pilot": str(min(1, slurm.gpus)),
        "time": toml_str("10m"),
        "vacate_before": toml_str("1m"),
        "scale_after": toml_str("0s"),
        "idle_release": toml_str("2s"),
        "python": toml_str(sys.executable),
        "home": toml_str(tmp_path / "pilots"),
        **settings,
    }
    nvq.write_config(
        "\n".join(
            [
                "[queue]",
                "local_node = false",
                'node_grace = "2s"',
                'lease = "off"',  # 2s leaves no lease (nvq.config.lease)
                'ssh_keepalive = "0.5s"',
                'ssh_connect_timeout = "3s"',
                "",
                "[[clusters]]",
                *(f"{key} = {value}" for key, value in table.items()),
                "[clusters.env]",
                f"NVQ_FAKE_GPUS = {toml_str(gpus)}",
                'NVQ_GPU_BACKEND = "fake"',
                'NVQ_SAMPLE_INTERVAL = "0.5"',
                "",
            ]
        )
    )


# cluster_queue(**settings) → the queue; settings as in `write_cluster_queue_config`.
ClusterQueue = Callable[..., Nvq]


def _queues(
    slurm: SlurmCluster, login: SshdNode, tmp_path: Path, **defaults: str
) -> Iterator[ClusterQueue]:
    made: list[Nvq] = []

    def make(**settings: str) -> Nvq:
        nvq = make_nvq(tmp_path)
        made.append(nvq)  # shut down even when its config is refused
        write_cluster_queue_config(nvq, slurm, login, tmp_path, **{**defaults, **settings})
        return nvq

    try:
        yield make
    finally:
        for nvq in made:
            nvq.shutdown()


@pytest.fixture
def cluster_queue(
    slurm_cluster: SlurmCluster, slurm_login: SshdNode, tmp_path: Path
) -> Iterator[ClusterQueue]:
    yield from _queues(slurm_cluster, slurm_login, tmp_path)


@pytest.fixture(scope="session")
def _site_slurm_once() -> Iterator[SlurmCluster]:
    try:
        cluster = SlurmCluster.start(gpus=4, private_compute=True)
    except SlurmUnavailable as exc:
        print(f"skipping: Slurm cannot start here: {exc}")
        pytest.skip(f"Slurm cannot start here: {str(exc).splitlines()[0]}")
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def site_slurm(_site_slurm_once: SlurmCluster) -> Iterator[SlurmCluster]:
    _site_slurm_once.reset_jobs()
    try:
        yield _site_slurm_once
    finally:
        _site_slurm_once.reset_jobs()


@pytest.fixture
def site_login(
    tmp_path: Path, sshd_client_key: ClientKey, site_slurm: SlurmCluster
) -> Iterator[SshdNode]:
    yield from _login_node(tmp_path, sshd_client_key, site_slurm)


@pytest.fixture
def site_queue(
    site_slurm: SlurmCluster, site_login: SshdNode, tmp_path: Path
) -> Iterator[ClusterQueue]:
    """Like `cluster_queue` over `site_slurm`; the pilots' home is in the directory
    only the login node sees (`site_home(tmp_path)`)."""
    home = toml_str(site_home(site_slurm, tmp_path))
    yield from _queues(site_slurm, site_login, tmp_path, home=home)


def site_home(slurm: SlurmCluster, tmp_path: Path) -> Path:
    """The test's pilots' home on the login node's side of `slurm.shared`."""
    home = slurm.shared / tmp_path.name / "pilots"
    home.mkdir(parents=True, exist_ok=True)
    return home


def pilot_gpus(slurm: SlurmCluster) -> str:
    """`--gpus` for a job that fits a pilot: one where Slurm has (fake) GPUs, else 0."""
    return "1" if slurm.gpus else "0"
