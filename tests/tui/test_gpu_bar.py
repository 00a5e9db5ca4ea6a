"""A card's memory bar: each share in proportion, none hidden, the width kept."""

from __future__ import annotations

import pytest

pytest.importorskip("rich")

from nvq.model import GpuView
from nvq.tui.gpu_bar import cells, gpu_bar, shares


def card(total: int, foreign: int, queue: int, reserved: int, free: int) -> GpuView:
    return GpuView(
        index=0,
        name="card",
        mem_used_mb=foreign + queue,
        mem_total_mb=total,
        mem_used_percent=0.0,
        util_percent=40,
        external_mem_mb=foreign,
        external_procs=1,
        queue_mem_mb=queue,
        reserved_mb=reserved,
        free_mb=free,
        attribution="measured",
        schedulable=True,
        jobs=[1],
        processes=[],
    )


def test_reserved_counts_only_what_the_queue_does_not_use_yet() -> None:
    # 20 GiB reserved, 6 GiB of it in use: 14 GiB drawn as reserved
    assert shares(card(24576, 2048, 6144, 20480, 0)) == (2048, 6144, 14336, 2048)


def test_a_small_share_still_shows_and_the_bar_keeps_its_width() -> None:
    # 10 MiB of foreign use still gets its cell; the biggest share gives it up
    assert cells((10, 23000, 0, 1566), 24576, 24) == [1, 21, 0, 2]
    bar = gpu_bar(card(24576, 10, 23000, 0, 1000), width=24)
    assert bar.cell_len == 24
    assert bar.plain.count("▒") == 0 and bar.plain.startswith("█")
