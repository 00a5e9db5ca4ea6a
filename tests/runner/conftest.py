from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.runner.test_live import node

__all__ = ["node", "umask_000"]


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)
