"""Pure accounting of the cards (nvq.daemon.placement.views)."""

from __future__ import annotations

from nvq.daemon.placement.views import capacity_grew
from nvq_runner.protocol import GpuSample, Sample


def _sample(used: list[int], mem_free: int = 1000) -> Sample:
    gpus = [GpuSample(index=i, total_mb=1000, used_mb=u, util_percent=None, processes=[])
            for i, u in enumerate(used)]
    return Sample(time=0.0, gpus=gpus, mem_free_mb=mem_free, progress={})


def test_first_sample_always_counts() -> None:
    assert capacity_grew(None, _sample([500]))


def test_more_unused_memory_on_a_card_counts() -> None:
    assert capacity_grew(_sample([500, 500]), _sample([500, 400]))


def test_same_or_less_room_does_not() -> None:
    assert not capacity_grew(_sample([500, 500]), _sample([500, 500]))
    assert not capacity_grew(_sample([500, 500]), _sample([600, 500]))


def test_a_new_card_or_more_host_memory_counts() -> None:
    assert capacity_grew(_sample([500]), _sample([500, 900]))
    assert capacity_grew(_sample([500], mem_free=1000), _sample([500], mem_free=1200))
