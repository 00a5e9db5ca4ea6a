"""What every GPU backend reports and promises: the node's cards (`GpuFacts`) and
the `GpuBackend` protocol the fake and NVML backends implement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol

from ..protocol import GpuInfo, GpuSample


@dataclass(frozen=True)
class GpuFacts:
    """What `Hello` says about the node's GPUs."""

    cuda: Optional[str] = None
    driver: Optional[str] = None
    gpus: list[GpuInfo] = field(default_factory=list)


class GpuBackend(Protocol):
    name: str

    def facts(self) -> GpuFacts: ...

    def sample(self) -> list[GpuSample]: ...

    def close(self) -> None: ...


class BackendError(Exception):
    """The backend asked for cannot run here."""
