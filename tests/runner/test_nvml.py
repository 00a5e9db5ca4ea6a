"""The NVML backend against a stand-in pynvml (no GPU needed): figures, blind
processes, per-call failures."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from nvq_runner.gpu import NoGpus, open_backend
from nvq_runner.gpu.nvml import NvmlBackend

GIB = 1024**3


class FakeNvml:
    def __init__(self) -> None:
        self.broken: set[str] = set()
        self.shutdowns = 0

    def _check(self, name: str) -> None:
        if name in self.broken:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def install(self, mp: pytest.MonkeyPatch) -> None:
        def fn(name: str, value: Any) -> None:
            def call(*args: Any) -> Any:
                self._check(name)
                return value(*args) if callable(value) else value

            mp.setattr(pynvml, name, call)

        fn("nvmlInit", None)
        fn("nvmlShutdown", lambda: setattr(self, "shutdowns", self.shutdowns + 1))
        fn("nvmlDeviceGetCount", 2)
        fn("nvmlDeviceGetHandleByIndex", lambda i: f"h{i}")
        fn("nvmlSystemGetDriverVersion", "580.1")
        fn("nvmlSystemGetCudaDriverVersion_v2", 13000)
        fn("nvmlSystemGetCudaDriverVersion", 12040)
        fn("nvmlDeviceGetName", lambda h: b"NVIDIA H200" if h == "h0" else "NVIDIA H100")
        fn("nvmlDeviceGetUUID", lambda h: f"GPU-{h}")
        fn("nvmlDeviceGetMemoryInfo",
           lambda h: SimpleNamespace(total=141 * GIB, used=20 * GIB, free=121 * GIB))
        fn("nvmlDeviceGetUtilizationRates", lambda h: SimpleNamespace(gpu=42, memory=3))
        own = os.getpid()
        fn("nvmlDeviceGetComputeRunningProcesses",
           lambda h: [SimpleNamespace(pid=own, usedGpuMemory=2 * GIB)] if h == "h0" else
           [SimpleNamespace(pid=own, usedGpuMemory=None)])
        fn("nvmlDeviceGetGraphicsRunningProcesses",
           lambda h: [SimpleNamespace(pid=own, usedGpuMemory=1 * GIB)] if h == "h0" else [])
        fn("nvmlDeviceGetMigMode", lambda h: (0, 0))


def test_nvml_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml()
    fake.install(monkeypatch)
    b = open_backend({})
    assert isinstance(b, NvmlBackend)
    facts = b.facts()
    assert (facts.cuda, facts.driver) == ("13.0", "580.1")
    assert [(g.index, g.name, g.uuid, g.total_mb) for g in facts.gpus] == [
        (0, "NVIDIA H200", "GPU-h0", 141 * 1024), (1, "NVIDIA H100", "GPU-h1", 141 * 1024)]
    s0, s1 = b.sample()
    assert (s0.used_mb, s0.util_percent, s0.blind) == (20 * 1024, 42, False)
    # one process on both lists counts once
    assert [(p.pid, p.used_mb) for p in s0.processes] == [(os.getpid(), 2048)]
    assert s0.processes[0].user != "?"
    assert s1.blind and [p.used_mb for p in s1.processes] == [None]

    fake.broken |= {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetGraphicsRunningProcesses"}
    s0, _ = b.sample()
    assert s0.util_percent is None and s0.used_mb == 20 * 1024 and len(s0.processes) == 1
    b.close()
    assert fake.shutdowns == 1


def test_nvml_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml()
    fake.install(monkeypatch)
    fake.broken.add("nvmlSystemGetCudaDriverVersion_v2")
    assert open_backend({"NVQ_GPU_BACKEND": "nvml"}).facts().cuda == "12.4"
    fake.broken.add("nvmlInit")
    assert isinstance(open_backend({}), NoGpus)
    with pytest.raises(Exception, match="NVML is not usable"):
        open_backend({"NVQ_GPU_BACKEND": "nvml"})
    assert isinstance(open_backend({"NVQ_GPU_BACKEND": "none"}), NoGpus)
    fake.broken.discard("nvmlInit")
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 0)
    assert isinstance(open_backend({}), NoGpus)  # NVML without cards


def test_mig_instances_are_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """A card in MIG mode is reported instance by instance (its empty slots skipped),
    each with its own memory and processes."""
    fake = FakeNvml()
    fake.install(monkeypatch)
    own = os.getpid()

    def mig_handle(h: str, k: int) -> str:
        if k not in (0, 2):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return f"{h}/mig{k}"

    monkeypatch.setattr(pynvml, "nvmlDeviceGetMigMode",
                        lambda h: (pynvml.NVML_DEVICE_MIG_ENABLE, 1) if h == "h1" else (0, 0))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMaxMigDeviceCount", lambda h: 7)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMigDeviceHandleByIndex", mig_handle)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetName", lambda h: (
        f"NVIDIA H100 MIG {'3g.40gb' if h.endswith('0') else '1g.10gb'}" if "/" in h
        else "NVIDIA H200"))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMemoryInfo", lambda h: SimpleNamespace(
        total=(40 if h.endswith("mig0") else 10 if "/" in h else 141) * GIB, used=0, free=0))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetComputeRunningProcesses", lambda h: (
        [SimpleNamespace(pid=own, usedGpuMemory=GIB)] if h == "h1/mig2" else []))
    b = NvmlBackend()
    got = [(g.index, g.name, g.uuid, g.total_mb, g.mig, g.parent) for g in b.facts().gpus]
    assert got == [
        (0, "NVIDIA H200", "GPU-h0", 141 * 1024, None, None),
        (1, "NVIDIA H100 MIG 3g.40gb", "GPU-h1/mig0", 40 * 1024, "3g.40gb", 1),
        (2, "NVIDIA H100 MIG 1g.10gb", "GPU-h1/mig2", 10 * 1024, "1g.10gb", 1),
    ]
    samples = b.sample()
    assert [len(s.processes) for s in samples] == [1, 0, 1]  # h0: its graphics process
    assert [s.total_mb for s in samples] == [141 * 1024, 40 * 1024, 10 * 1024]
    b.close()
