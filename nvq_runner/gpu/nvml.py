"""The NVML backend (pynvml, imported here only). Every NVML call may fail on its own
(a card fallen off the bus, a call the driver does not support); such a failure
costs that one figure, never the whole sample."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import pynvml

from .. import procfs
from ..protocol import GpuInfo, GpuProcess, GpuSample
from .base import GpuFacts
from .health import CardEvidence
from .nvml_health import NvmlHealth

log = logging.getLogger(__name__)
_MIB = 1024 * 1024
T = TypeVar("T")


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _try(what: str, call: Callable[..., T], *args: Any) -> T | None:
    try:
        return call(*args)
    except pynvml.NVMLError as exc:
        log.debug("NVML %s failed: %s", what, exc)
        return None


def cuda_version_text(version: int) -> str:
    """NVML's integer CUDA version (13000, 12040) as "13.0", "12.4"."""
    return f"{version // 1000}.{(version % 1000) // 10}"


def _units_of(index: int, handle: Any) -> list[tuple[Any, int]]:
    """A card's placement units: its MIG instances when MIG mode is on, else itself."""
    mode = _try("MIG mode", pynvml.nvmlDeviceGetMigMode, handle)
    if not mode or mode[0] != pynvml.NVML_DEVICE_MIG_ENABLE:
        return [(handle, index)]
    count = _try("MIG count", pynvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    found = [_try("MIG instance", pynvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, k)
             for k in range(count)]
    return [(h, index) for h in found if h is not None] or [(handle, index)]


class NvmlBackend:
    name = "nvml"

    def __init__(self) -> None:
        pynvml.nvmlInit()
        self._handles: list[Any] = []
        try:
            for i in range(pynvml.nvmlDeviceGetCount()):
                self._handles.append(pynvml.nvmlDeviceGetHandleByIndex(i))
        except pynvml.NVMLError:
            pynvml.nvmlShutdown()
            raise
        # The placement units: each card, or each MIG instance of a card in MIG mode,
        # as (handle, the physical card's index).
        self._units = [unit for i, h in enumerate(self._handles) for unit in _units_of(i, h)]
        self._facts = self._read_facts()
        self._health = NvmlHealth(self._handles)

    def _read_facts(self) -> GpuFacts:
        driver = _try("driver version", pynvml.nvmlSystemGetDriverVersion)
        cuda = _try("CUDA version", pynvml.nvmlSystemGetCudaDriverVersion_v2)
        if cuda is None:
            cuda = _try("CUDA version", pynvml.nvmlSystemGetCudaDriverVersion)
        gpus = []
        for index, (h, parent) in enumerate(self._units):
            name = _try("name", pynvml.nvmlDeviceGetName, h)
            uuid = _try("uuid", pynvml.nvmlDeviceGetUUID, h)
            mem = _try("memory", pynvml.nvmlDeviceGetMemoryInfo, h)
            text = _text(name) if name is not None else "unknown"
            mig = h is not self._handles[parent]
            gpus.append(
                GpuInfo(
                    index=index,
                    name=text,
                    uuid=_text(uuid) if uuid is not None else f"GPU-unknown-{index}",
                    total_mb=int(mem.total) // _MIB if mem is not None else 0,
                    # "NVIDIA A100-SXM4-80GB MIG 3g.40gb": the profile is the last word
                    mig=text.rsplit(" ", 1)[-1] if mig else None,
                    parent=parent if mig else None,
                )
            )
        return GpuFacts(
            cuda=cuda_version_text(cuda) if cuda else None,
            driver=_text(driver) if driver is not None else None,
            gpus=gpus,
        )

    def facts(self) -> GpuFacts:
        return self._facts

    def health(self, index: int) -> CardEvidence:
        """A MIG instance's health is its card's."""
        return self._health.read(self._units[index][1])

    def sample(self, skip: Collection[int] = frozenset()) -> list[GpuSample]:
        out = []
        for index, (h, _) in enumerate(self._units):
            if index in skip:  # its NVML hangs: asking again would hang this read too
                total = self._facts.gpus[index].total_mb
                out.append(GpuSample(index=index, total_mb=total, used_mb=0,
                                     util_percent=None, processes=[]))
                continue
            mem = _try("memory", pynvml.nvmlDeviceGetMemoryInfo, h)
            util = _try("utilisation", pynvml.nvmlDeviceGetUtilizationRates, h)
            used: dict[int, int | None] = {}
            for getter in (
                pynvml.nvmlDeviceGetComputeRunningProcesses,
                pynvml.nvmlDeviceGetGraphicsRunningProcesses,
            ):
                procs = _try("processes", getter, h) or []
                for p in procs:
                    mib = None if p.usedGpuMemory is None else int(p.usedGpuMemory) // _MIB
                    # A process on both lists (CUDA + graphics) is counted once.
                    old = used.get(p.pid)
                    used[p.pid] = mib if old is None else max(old, mib or 0)
            processes = [
                GpuProcess(pid=pid, user=procfs.process_user(pid), used_mb=mib)
                for pid, mib in sorted(used.items())
            ]
            total = self._facts.gpus[index].total_mb
            out.append(
                GpuSample(
                    index=index,
                    total_mb=int(mem.total) // _MIB if mem is not None else total,
                    used_mb=int(mem.used) // _MIB if mem is not None else 0,
                    util_percent=int(util.gpu) if util is not None else None,
                    processes=processes,
                    blind=any(p.used_mb is None for p in processes),
                )
            )
        return out

    def close(self) -> None:
        self._health.close()
        _try("shutdown", pynvml.nvmlShutdown)
