"""The terminal UI's update latency: event → on screen, with a full queue.

A card held by a blocker and `--jobs` jobs waiting behind it; `nvq queue`'s app runs
headless under Textual's pilot against the real daemon. Figures:

* open: from starting the app to the job list on screen (one `jobs` read);
* submit → row: a job submitted from another thread, until its row is in the table
  (from the call's start and from its return: the event is pushed, so the row may be
  there before the submit call has returned);
* cancel → state: a waiting job cancelled, until its row says `cancelled`.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from functools import partial

from common import emit, machine, queue, summary_ms, wait_nodes_up

from nvq.client import Client
from nvq.client.asynchronous import AsyncClient
from nvq.tui.app import QueueApp
from nvq.tui.latest import latest_event_id

CARD = "20GiB"


def fill(home: str, jobs: int) -> None:
    """A blocker on the card and `jobs` waiting behind it (one array: one request)."""
    with Client(home) as q:
        q.submit(["sleep", "3600"], vram=CARD, name="blocker")
        q.submit(["true"], vram=CARD, name="waiting", array=f"0-{jobs - 1}")


async def watch_events(home: str, since: int, arrived: dict[tuple[str, int], float]) -> None:
    """When each event reaches a plain subscriber: the daemon's share of the latency."""
    async for event in AsyncClient(home).subscribe(since):
        if event.job_id is not None:
            arrived.setdefault((event.kind, event.job_id), time.perf_counter())


async def until(cond: Callable[[], bool], limit: float = 60) -> float:
    """Seconds (perf_counter) at which `cond` first held, checked every millisecond."""
    deadline = time.perf_counter() + limit
    while not cond():
        if time.perf_counter() > deadline:
            raise RuntimeError("the UI never showed it")
        await asyncio.sleep(0.001)
    return time.perf_counter()


def row_state(app: QueueApp, id: int) -> str | None:
    table = app.jobs_table
    if str(id) not in table.rows:
        return None
    return str(table.get_cell(str(id), "STATE"))


def _more_rows(app: QueueApp, before: int) -> bool:
    return len(app.jobs_table.rows) > before


def _cancelled(app: QueueApp, id: int) -> bool:
    return row_state(app, id) == "cancelled"


async def measure(home: str, runs: int) -> dict[str, object]:
    client = Client(home)
    app = QueueApp(AsyncClient(home))
    opened = time.perf_counter()
    async with app.run_test(size=(200, 50)) as pilot:
        await app.loaded.wait()
        open_s = time.perf_counter() - opened
        rows = app.jobs_table.row_count
        arrived: dict[tuple[str, int], float] = {}
        watcher = asyncio.create_task(
            watch_events(home, await latest_event_id(AsyncClient(home)), arrived)
        )
        pushed: list[float] = []
        from_call: list[float] = []
        from_return: list[float] = []
        cancel: list[float] = []
        for i in range(runs):
            seen: dict[str, float] = {}

            def submit(i: int = i, seen: dict[str, float] = seen) -> int:
                seen["call"] = time.perf_counter()
                job = client.submit(["true"], vram=CARD, name=f"probe-{i}")
                seen["return"] = time.perf_counter()
                return job.id

            task = asyncio.create_task(asyncio.to_thread(submit))
            # the id is not known before the call returns: watch for the new row
            before = set(app.jobs_table.rows)
            shown = await until(partial(_more_rows, app, len(before)))
            id = await task
            assert row_state(app, id) is not None
            from_call.append(shown - seen["call"])
            pushed.append(arrived[("job_submitted", id)] - seen["call"])
            from_return.append(shown - seen["return"])

            started = time.perf_counter()
            await asyncio.to_thread(client.cancel, id)
            ended = await until(partial(_cancelled, app, id))
            cancel.append(ended - started)
            await pilot.pause()
        watcher.cancel()
    return {
        "rows_on_screen": rows,
        "open_s": round(open_s, 3),
        "submit_to_row_from_call": summary_ms(from_call),
        "submit_to_row_after_return": summary_ms(from_return),
        "submit_to_event_at_a_subscriber": summary_ms(pushed),
        "cancel_to_state": summary_ms(cancel),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000, help="jobs waiting in the queue")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with queue("local") as nvq:
        wait_nodes_up(nvq)
        filled = time.monotonic()
        fill(str(nvq.home), args.jobs)
        fill_s = time.monotonic() - filled
        figures = asyncio.run(measure(str(nvq.home), args.runs))
    emit(
        {
            "bench": "tui_latency",
            "jobs_waiting": args.jobs,
            "fill_s": round(fill_s, 1),
            **figures,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
