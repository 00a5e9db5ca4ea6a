"""GPU backends: what cards a node has and what runs on them.

`NVQ_GPU_BACKEND` picks one of `nvml`, `fake`, `none`. Without it: `fake` when
`NVQ_FAKE_GPUS` is set, else `nvml` where pynvml loads and finds cards, else `none`.
Backends report raw figures; the server adds each process's job id afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from ..protocol import GpuSample
from .base import BackendError, GpuBackend, GpuFacts
from .health import CardEvidence
from .watch import Watched

__all__ = ["BackendError", "GpuBackend", "GpuFacts", "NoGpus", "Watched", "open_backend"]

log = logging.getLogger(__name__)


class NoGpus:
    name = "none"

    def facts(self) -> GpuFacts:
        return GpuFacts()

    def sample(self, skip: Collection[int] = frozenset()) -> list[GpuSample]:
        return []

    def health(self, index: int) -> CardEvidence:
        return CardEvidence()

    def close(self) -> None:
        pass


def open_backend(env: Mapping[str, str]) -> GpuBackend:
    choice = env.get("NVQ_GPU_BACKEND", "").strip().lower()
    fake_path = env.get("NVQ_FAKE_GPUS", "")
    if choice == "none":
        return NoGpus()
    if choice == "fake" or (not choice and fake_path):
        from .fake import FakeBackend

        if not fake_path:
            raise BackendError("NVQ_GPU_BACKEND=fake needs NVQ_FAKE_GPUS=/path/gpus.toml")
        return FakeBackend(fake_path)
    if choice not in ("", "nvml"):
        raise BackendError(f"unknown NVQ_GPU_BACKEND {choice!r} (nvml, fake or none)")
    try:
        from .nvml import NvmlBackend

        nvml = NvmlBackend()
    except Exception as exc:  # pynvml missing, no driver, no device: all mean "no NVML"
        if choice == "nvml":
            raise BackendError(f"NVML is not usable: {exc}") from exc
        log.info("no NVML (%s); running without GPUs", exc)
        return NoGpus()
    if not choice and not nvml.facts().gpus:
        nvml.close()
        return NoGpus()
    return nvml
