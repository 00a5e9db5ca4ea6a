"""A CUDA out-of-memory, told from other failures, and the larger reservation
`--retries-on oom` runs it again with. Pure.

An attempt that failed (its own non-zero exit: not a timeout, not a kill) ran out of
GPU memory when its stderr tail (stdout's, when stderr was empty) holds a framework's
out-of-memory error (`_MARKERS`), or holds a bare "out of memory" while its samples
show it reached its `--vram` reservation on some card: a job that used less than it
reserved ran out of host memory, if anything.

The retry's reservation: max(peak, reserved) × 1.5, rounded up to a whole GiB, at most
what the largest fitting cards hold (so it can always be placed somewhere); never less
than it was."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # the CLI renders peaks with this module: keep its import light
if TYPE_CHECKING:
    from nvq.model import JobRecord, JobSpec

# What PyTorch, TensorFlow/JAX (XLA), cuBLAS/cuDNN and the CUDA runtime print
# when a card's memory runs out.
_MARKERS = (
    "CUDA out of memory",
    "OutOfMemoryError",  # torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "cudaErrorMemoryAllocation",
    "RESOURCE_EXHAUSTED: Out of memory",
    "OOM when allocating tensor",
)
MARGIN = 1.5
_GIB = 1024


def ran_out(job: JobRecord, *, failed: bool, tail: str, peak_mb: int) -> bool:
    """True when the attempt that `failed` with stderr tail `tail` and peak `peak_mb`
    (MiB on its fullest card, 0 unknown) ran out of GPU memory."""
    if not failed or job.spec.gpus == 0:
        return False
    if any(marker in tail for marker in _MARKERS):
        return True
    reached = job.spec.vram_mb > 0 and peak_mb >= job.spec.vram_mb
    return reached and "out of memory" in tail.lower()


def larger_vram(reserved_mb: int, peak_mb: int, cap_mb: int) -> int:
    """The reservation a retry asks for (the module's rule); `cap_mb` 0: no node's
    cards are known, no cap."""
    grown = math.ceil(max(reserved_mb, peak_mb) * MARGIN / _GIB) * _GIB
    if cap_mb > 0:
        grown = min(grown, cap_mb)
    return max(grown, reserved_mb)


def vram_cap(
    nodes: Mapping[str, Sequence[tuple[int, int]]], spec: JobSpec, headroom_mb: int
) -> int:
    """The most `spec.gpus` cards of one node hold each, less the queue's headroom,
    over the nodes (name → its cards as (index, MiB)) the job may go to: its `--node`
    prefix, its lane's card. 0: none has that many cards (the rule is then uncapped)."""
    lane_node, _, lane_card = (spec.lane or "").partition(":")
    best = 0
    for name, cards in nodes.items():
        if (spec.node and not name.startswith(spec.node)) or (spec.lane and name != lane_node):
            continue
        sizes = sorted((mb for i, mb in cards if not spec.lane or str(i) == lane_card),
                       reverse=True)
        if max(spec.gpus, 1) <= len(sizes):
            best = max(best, sizes[max(spec.gpus, 1) - 1] - headroom_mb)
    return best


def reason(job: JobRecord, peak_mb: int, code: int | None) -> str:
    """`exited with code 1: out of GPU memory (peak 5 GiB of 4 GiB reserved)`."""
    return f"exited with code {code}: out of GPU memory" + (
        f" ({peak_text(peak_mb, job.spec.vram_mb)})" if peak_mb else ""
    )


def peak_text(peak_mb: int, reserved_mb: int) -> str:
    """`peak 17.2 GiB of 20 GiB reserved` (`on whole cards` without one)."""
    of = f"of {gib(reserved_mb)} reserved" if reserved_mb else "on whole cards"
    return f"peak {gib(peak_mb)} {of}"


def gib(mb: int) -> str:
    """17612 → `17.2 GiB`, 4096 → `4 GiB`, 900 → `900 MiB`."""
    if mb < _GIB:
        return f"{mb} MiB"
    return f"{mb / _GIB:.1f}".removesuffix(".0") + " GiB"


def resized_words(new_mb: int, was_mb: int) -> str:
    """`--vram 6 GiB (was 4 GiB: oom)`."""
    return f"--vram {gib(new_mb)} (was {gib(was_mb)}: oom)"


def attempt_words(vram_mb: int | None, was_mb: int | None, peak_mb: int | None) -> str:
    """An attempt's memory in words: `--vram 6 GiB (was 4 GiB: oom); peak 5.1 GiB of
    6 GiB reserved` — what it reserved when an oom retry raised it, and what it used
    ("" when neither is known)."""
    parts = []
    if was_mb is not None and vram_mb is not None:
        parts.append(resized_words(vram_mb, was_mb))
    if peak_mb is not None:
        parts.append(peak_text(peak_mb, vram_mb or 0))
    return "; ".join(parts)
