"""Fixtures the CLI tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode


@pytest.fixture
def remote(tmp_path: Path, sshd_nodes: Any) -> Iterator[tuple[Nvq, SshdNode]]:
    """A queue whose one node is a fresh sshd node (no local node)."""
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    write_mesh_config(nvq, [node])
    try:
        yield nvq, node
    finally:
        nvq.shutdown()
