from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.cluster import Nvq, make_nvq

# Hypothesis's per-example deadline (200 ms) and its too-slow check are timing
# assertions: at -n 8 on 2 cores an example took 260 ms and failed a correct test.
settings.register_profile("nvq", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nvq")

pytest_plugins = ["tests.harness.fixtures", "tests.harness.slurm_fixtures"]


@pytest.fixture
def nvq(tmp_path: Path) -> Iterator[Nvq]:
    """A fresh NVQ_HOME on the local node with two fake 24 GiB GPUs."""
    q = make_nvq(tmp_path)
    try:
        yield q
    finally:
        q.shutdown()


# What makes a test end-to-end (`make test-fast` leaves these out): it drives the `nvq`
# CLI as a process (tests.cluster's Nvq) or starts sshd or Slurm. Read from the fixtures a
# test asks for and from the harness objects its module imports, so no list of files
# has to be kept.
_E2E_FIXTURES = frozenset(
    {"nvq", "sshd_nodes", "slurm_cluster", "slurm_login", "site_slurm", "site_login"}
)
_E2E_MODULES = frozenset(
    {"tests.cluster", "tests.harness.cli_calls", "tests.harness.sshd", "tests.harness.slurm"}
)


def _imports_harness(module: object) -> bool:
    return any(
        getattr(value, "__module__", None) in _E2E_MODULES
        for value in vars(module).values()
        if callable(value)
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: drives the nvq CLI as a process or starts sshd/Slurm (not in test-fast)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    harness: dict[str, bool] = {}
    for item in items:
        module = getattr(item, "module", None)
        name = getattr(module, "__name__", "")
        if name not in harness:
            harness[name] = module is not None and _imports_harness(module)
        if harness[name] or _E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
    _longest_first(items)


# The order the workers take the tests in (xdist hands them out in that order): the
# modules with the longest tests first (Slurm, then sshd, then the other end-to-end
# ones and the property tests), the quick in-process ones last. Taken in file order,
# a Slurm or sshd test handed out near the end ran on alone while the other workers
# had finished; quick ones at the end fill the gaps instead. A module's tests stay
# together (its module-scoped fixtures are set up once per worker).
_SLURM_FIXTURES = frozenset(
    {"slurm_cluster", "slurm_login", "cluster_queue", "site_slurm", "site_login", "site_queue"}
)


def _weight(item: pytest.Item) -> int:
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & _SLURM_FIXTURES:
        return 0
    if "sshd_nodes" in fixtures:
        return 1
    function = getattr(item, "function", None)
    if item.get_closest_marker("e2e") or getattr(function, "is_hypothesis_test", False):
        return 2
    return 3


def _longest_first(items: list[pytest.Item]) -> None:
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        rank[module] = min(rank.get(module, 3), _weight(item))
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])  # stable
