"""A running attempt's peak GPU memory per card, from the samples of its own
processes: summed per card, only ever growing, kept in its job directory so that a
runner adopting the attempt continues from it, and never an earlier attempt's."""

from __future__ import annotations

from pathlib import Path

from nvq_runner import vram_peaks
from nvq_runner.protocol import GpuProcess, GpuSample, Sample


def sample(*cards: list[tuple[int | None, int | None]]) -> Sample:
    """Each card: its processes as (job id, MiB)."""
    return Sample(time=0.0, mem_free_mb=0, progress={}, gpus=[
        GpuSample(index=i, total_mb=24576, used_mb=0, util_percent=None, processes=[
            GpuProcess(pid=100 + n, user="u", used_mb=mib, job_id=job)
            for n, (job, mib) in enumerate(procs)
        ]) for i, procs in enumerate(cards)
    ])  # fmt: skip


def test_a_jobs_processes_add_up_per_card_and_others_do_not_count() -> None:
    s = sample([(7, 1000), (7, 500), (None, 9000)], [(7, 2000), (8, 300), (7, None)])
    assert vram_peaks.use_by_job(s) == {7: {0: 1500, 1: 2000}, 8: {1: 300}}


def test_the_peak_only_grows_and_survives_a_new_recorder(tmp_path: Path) -> None:
    rec = vram_peaks.PeakRecorder()
    running = {7: (2, tmp_path)}
    rec.record(sample([(7, 3000)]), running)
    rec.record(sample([(7, 1000)], [(7, 500)]), running)
    assert vram_peaks.read(tmp_path, 2) == {0: 3000, 1: 500}
    again = vram_peaks.PeakRecorder()  # a restarted runner adopting attempt 2
    again.record(sample([(7, 2500)]), running)
    assert vram_peaks.read(tmp_path, 2) == {0: 3000, 1: 500}
    assert vram_peaks.read(tmp_path, 3) == {}  # another attempt's file says nothing


def test_a_job_that_never_showed_on_a_card_has_no_file(tmp_path: Path) -> None:
    vram_peaks.PeakRecorder().record(sample([(None, 100)]), {7: (1, tmp_path)})
    assert not (tmp_path / vram_peaks.FILE).exists()
    assert vram_peaks.read(tmp_path, 1) == {}
