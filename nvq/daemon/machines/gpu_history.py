"""The daemon's record of each card over time: once a minute, every node-GPU's memory
split and utilisation as the Nodes view shows it at that moment go to the store's
`gpu_history` table (7 days kept). Taken on a clock rather than from the runners'
samples, which only arrive when something changed: a quiet card still gets its point."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import anyio

from nvq.daemon.core.state import State
from nvq.daemon.machines.node_views import node_views
from nvq.daemon.placement.inputs import PilotNodes
from nvq.store import gpu_history as history_table

log = logging.getLogger("nvq.history")

EVERY = 60.0


def interval() -> float:
    """Seconds between points; tests shorten it with NVQ_GPU_HISTORY_EVERY."""
    try:
        return max(0.1, float(os.environ.get("NVQ_GPU_HISTORY_EVERY", EVERY)))
    except ValueError:
        return EVERY


def points_now(state: State, pilots: PilotNodes | None, at: float) -> list[tuple[Any, ...]]:
    """One row (history_table.COLUMNS) per card of every node that reported one."""
    rows: list[tuple[Any, ...]] = []
    for node in node_views(state, pilots):
        if node.state not in ("up", "draining"):
            continue
        for g in node.gpus:
            rows.append(
                (at, node.name, g.index, g.mem_total_mb, g.external_mem_mb, g.queue_mem_mb,
                 g.reserved_mb, g.util_percent)
            )  # fmt: skip
    return rows


async def keep_history(state: State, pilots: PilotNodes | None) -> None:
    every = interval()
    while True:
        now = time.time()
        await anyio.sleep(every - now % every)  # on the minute, so points line up
        at = time.time() // every * every
        rows = points_now(state, pilots, at)
        if rows:
            await record(state, rows, at)


async def record(state: State, rows: list[tuple[Any, ...]], at: float) -> None:
    try:
        await state.store.sync(lambda conn: history_table.append(conn, rows, at))
    except Exception:
        # A full disk must not stop the daemon: the chart only loses a point.
        log.exception("could not record the GPU history")
