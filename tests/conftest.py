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
