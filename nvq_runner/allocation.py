"""The cards a batch allocation (a Slurm pilot) was granted, as NVML indices.

A runner started inside a Slurm job offers only the cards Slurm gave that job, never
every card NVML reports: on a site without `ConstrainDevices=yes` NVML sees the whole
machine. Slurm names the cards in `SLURM_JOB_GPUS` (or `SLURM_STEP_GPUS`, or its own
`CUDA_VISIBLE_DEVICES`) by their index on the node, which is the NVML index where
gres.conf lists the device files in order (the usual `File=/dev/nvidia[0-7]`). Where
the cgroup hides the other cards, NVML numbers the granted ones from 0: then the ids
are out of NVML's range and there are exactly as many cards as ids, and every card
NVML sees is the allocation's.
"""

from __future__ import annotations

from collections.abc import Mapping

SLURM_GPU_VARS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES")


def _ids(text: str) -> list[int] | None:
    """`0,3` or `0-2,5` → ids; None when an entry is not a number (a UUID, say)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            return None
        out.extend(range(int(low), int(high) + 1) if sep else [int(low)])
    return out


def allocated_gpus(env: Mapping[str, str], nvml_count: int) -> list[int] | None:
    """NVML indices of the cards this process's Slurm job was granted; None outside a
    Slurm job (every card is the node's to offer)."""
    if not env.get("SLURM_JOB_ID"):
        return None
    for name in SLURM_GPU_VARS:
        if name not in env:
            continue
        ids = _ids(env[name])
        if ids is None:
            continue
        if ids and len(ids) == nvml_count and max(ids) >= nvml_count:
            return list(range(nvml_count))  # the cgroup shows only the granted cards
        return sorted({i for i in ids if i < nvml_count})
    return []  # a Slurm job granted no GPU
