"""What every GPU backend reports and promises: the node's cards (`GpuFacts`) and
the `GpuBackend` protocol the fake and NVML backends implement."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Optional, Protocol

from ..errors import NvqRunnerError
from ..protocol import GpuInfo, GpuSample
from .health import CardEvidence


@dataclass(frozen=True)
class GpuFacts:
    """What `Hello` says about the node's GPUs."""

    cuda: Optional[str] = None
    driver: Optional[str] = None
    gpus: list[GpuInfo] = field(default_factory=list)


class GpuBackend(Protocol):
    name: str

    def facts(self) -> GpuFacts: ...

    def sample(self, skip: Collection[int] = frozenset()) -> list[GpuSample]:
        """Every card's figures; `skip`: cards whose NVML hangs, reported without
        asking NVML (their figures zero). `faults` is left empty: `HealthWatch` fills it."""
        ...

    def health(self, index: int) -> CardEvidence:
        """Card `index`'s evidence, read now. May block (a hung driver): the runner
        calls it from the card's own thread (`gpu/watch.py`)."""
        ...

    def close(self) -> None: ...


# unit index → how CUDA_VISIBLE_DEVICES names it, where not by its index (a MIG
# instance: its MIG-… uuid); the runner's facts fill it (gpu/watch.py `Watched`).
_devices: dict[int, str] = {}


def remember_devices(facts: GpuFacts) -> None:
    _devices.clear()
    _devices.update({g.index: g.uuid for g in facts.gpus if g.mig is not None})


def visible_devices(indices: list[int]) -> str:
    """CUDA_VISIBLE_DEVICES for a job given these units."""
    return ",".join(_devices.get(i, str(i)) for i in indices)


class BackendError(NvqRunnerError):
    """The backend asked for cannot run here."""
