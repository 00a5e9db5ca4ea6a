"""Matching facts for placement (CUDA versions, host memory): pure."""

from __future__ import annotations

import re

_CUDA_RE = re.compile(r"(\d+)(?:\.(\d+))?")


def parse_cuda(text: str) -> tuple[int, int]:
    """`"13.0"` → (13, 0); `"12"` → (12, 0). Raises ValueError."""
    match = _CUDA_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"CUDA version {text!r}: expected MAJOR.MINOR, e.g. 13.0")
    return int(match.group(1)), int(match.group(2) or 0)


def node_cuda(text: str | None) -> tuple[int, int] | None:
    """A node's reported version; one we cannot read counts as unknown."""
    if text is None:
        return None
    try:
        return parse_cuda(text)
    except ValueError:
        return None


def memory_free(total_mb: int | None, sample_free_mb: int | None, promised_mb: int) -> int | None:
    """Host RAM a new job may still be promised: what the node reports free, but never
    more than its total less what running queue jobs were promised (a job that has not
    grown into its `--memory` yet still owns it)."""
    if total_mb is None:
        return None
    unpromised = total_mb - promised_mb
    return unpromised if sample_free_mb is None else min(sample_free_mb, unpromised)
