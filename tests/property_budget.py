"""How many examples a property test draws: its full count under `make test`, an
eighth (at least 25) under `make test-fast` (NVQ_TEST_FAST=1), whose inner loop the
two big property tests would otherwise take most of."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    if os.environ.get("NVQ_TEST_FAST") == "1":
        return max(25, full // 8)
    return full
