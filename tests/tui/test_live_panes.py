"""What moves in `nvq queue` without a key pressed, driven by Textual's pilot against a
real daemon and runner: a running job's RUNTIME and PROGRESS (and the selected job's
header) move on their own; the log pane shows both streams, marked; Enter opens the
whole log. Time is moved by the app's clock, not waited for."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Log, Static

from nvq.client.asynchronous import AsyncClient
from nvq.tui.app import QueueApp
from tests.cluster import Nvq
from tests.fakes.aio import run
from tests.tui.test_queue_app import SIZE, row_of, until

COLUMN = {"RUNTIME": 6, "PROGRESS": 7}


def script(go: Path) -> str:
    return (
        'echo "step 1/200" > "$NVQ_STATUS_FILE"; echo out-line; echo err-line >&2; '
        f"while [ ! -e {go} ]; do sleep 0.05; done; "
        'echo "step 2/200" > "$NVQ_STATUS_FILE"; sleep 600'
    )


def test_runtime_progress_header_and_logs_move_on_their_own(nvq: Nvq, tmp_path: Path) -> None:
    go = tmp_path / "go"
    job = nvq.submit("--gpus", "0", "--name", "train", "--", script(go))
    jid = job["id"]
    now = [time.time()]

    def cell(app: QueueApp, name: str) -> str:
        cells = row_of(app, jid)
        return "" if cells is None else cells[COLUMN[name]]

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home, autostart=True), clock=lambda: now[0])
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "PROGRESS") == "step 1/200", "step 1")
            # two hours later by the app's clock: the row and the header say so
            now[0] = time.time() + 2 * 3600
            await until(pilot, lambda: cell(app, "RUNTIME").startswith("2h"), "runtime 2h")
            header = app.query_one("#detail", Static)
            await until(pilot, lambda: " 2h" in str(header.render()), "the header's runtime")
            # the job reports progress; nothing but the app's own reads brings it
            await asyncio.to_thread(go.touch)
            await until(pilot, lambda: cell(app, "PROGRESS") == "step 2/200", "step 2")
            # the log pane: both streams, each line marked
            pane = app.query_one("#logs", Log)
            await until(pilot, lambda: "err| err-line" in "\n".join(pane.lines), "stderr")
            assert "out| out-line" in "\n".join(pane.lines)
            # Enter: the whole log on a screen of its own; Escape goes back
            await pilot.press("enter")
            await until(pilot, lambda: bool(app.screen.query("#whole-log")), "the log screen")
            whole = app.screen.query_one("#whole-log", Log)
            await until(pilot, lambda: "err| err-line" in "\n".join(whole.lines), "whole log")
            await pilot.press("escape")
            await until(pilot, lambda: not app.screen.query("#whole-log"), "the jobs again")

    try:
        run(main)
    finally:
        nvq.ok("job", "cancel", str(jid))
