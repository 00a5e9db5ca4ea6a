from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Nvq, make_nvq

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
_E2E_FIXTURES = frozenset({"nvq", "sshd_nodes", "slurm_cluster", "slurm_login"})
_E2E_MODULES = frozenset({"tests.cluster", "tests.harness.sshd", "tests.harness.slurm"})


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
