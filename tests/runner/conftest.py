from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)
