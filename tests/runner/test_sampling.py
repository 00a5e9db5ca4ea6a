"""Which samples the runner sends (nvq_runner.sampling)."""

from __future__ import annotations

from nvq_runner.protocol import GpuSample, Sample
from nvq_runner.sampling import worth_sending


def _sample(t: float, used: int = 100, mem: int = 10_000, progress: str | None = None) -> Sample:
    gpu = GpuSample(index=0, total_mb=1000, used_mb=used, util_percent=None, processes=[])
    return Sample(time=t, gpus=[gpu], mem_free_mb=mem, progress={1: progress} if progress else {})


def test_first_sample_is_sent() -> None:
    assert worth_sending(None, _sample(0))


def test_unchanged_sample_is_held_back_until_the_heartbeat() -> None:
    assert not worth_sending(_sample(0), _sample(2))
    assert worth_sending(_sample(0), _sample(30))


def test_a_changed_card_or_progress_line_is_sent() -> None:
    assert worth_sending(_sample(0), _sample(2, used=200))
    assert worth_sending(_sample(0), _sample(2, progress="epoch 2"))


def test_host_memory_counts_by_whole_steps() -> None:
    assert not worth_sending(_sample(0, mem=10_000), _sample(2, mem=10_100))
    assert worth_sending(_sample(0, mem=10_000), _sample(2, mem=10_300))
    assert worth_sending(_sample(0, mem=10_000), _sample(2, mem=9_700))
