"""`nvq queue`, the terminal UI, driven by Textual's pilot against a real daemon and
runner: what a person at the keyboard sees and what the keys do."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

pytest.importorskip("textual")

from nvq.client.asynchronous import AsyncClient
from nvq.tui.app import QueueApp
from nvq.values import format_duration
from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.fakes.aio import run
from tests.harness.fixtures import SshdNodesFactory

SIZE = (160, 48)


async def until(pilot: Pilot[None], cond: Callable[[], bool], what: str) -> None:
    """Let the app run until `cond` holds, for at most 30 s."""
    for _ in range(600):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"the UI never showed {what}")


def row_of(app: QueueApp, job_id: int) -> list[str] | None:
    table = app.jobs_table
    if str(job_id) not in table.rows:
        return None
    return [str(cell) for cell in table.get_row(str(job_id))]


def state_shown(app: QueueApp, job_id: int) -> str | None:
    cells = row_of(app, job_id)
    return None if cells is None else cells[1]


def test_jobs_table_shows_a_submitted_job(nvq: Nvq) -> None:
    first = nvq.submit("--name", "before", "--", "sleep", "30")

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home, autostart=True))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: state_shown(app, first["id"]) == "running", "job 1")
            # a job submitted while the UI is open arrives through the event stream
            later = await asyncio.to_thread(nvq.submit, "--name", "later", "--", "sleep", "30")
            await until(pilot, lambda: row_of(app, later["id"]) is not None, "the new job")
            cells = row_of(app, later["id"])
            assert cells is not None and cells[3] == "later"
            node_row = [str(c) for c in app.nodes_table.get_row_at(0)]
            assert "local" in node_row
            assert node_row[3].endswith(" of 24GiB")  # FREE: free of total, in words

    run(main)


def test_cancel_from_the_ui_asks_then_cancels(nvq: Nvq) -> None:
    job = nvq.submit("--name", "victim", "--", "sleep", "60")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: state_shown(app, job["id"]) == "running", "the job")
            app.jobs_table.focus()
            app.jobs_table.move_cursor(row=app.jobs_table.get_row_index(str(job["id"])))
            await pilot.press("c")
            await pilot.pause()
            assert type(app.screen).__name__ == "ConfirmScreen"
            await pilot.press("n")  # refused: nothing happens
            await pilot.pause()
            assert state_shown(app, job["id"]) == "running"
            await pilot.press("c")
            await pilot.pause()
            await pilot.press("y")
            await until(pilot, lambda: state_shown(app, job["id"]) == "cancelled", "the cancel")
            assert "cancelled" in app.status_text

    run(main)
    assert nvq.show(job["id"])["state"] == "cancelled"


def test_log_pane_follows_the_selected_job(nvq: Nvq) -> None:
    script = "for i in 1 2 3 4 5 6; do echo tick-$i; sleep 0.3; done; sleep 30"
    job = nvq.submit("--name", "ticker", "--", "bash", "-c", script)

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: row_of(app, job["id"]) is not None, "the job")
            app.jobs_table.move_cursor(row=app.jobs_table.get_row_index(str(job["id"])))
            logs = app.query_one("#logs")
            await until(pilot, lambda: "tick-6" in "\n".join(logs.lines), "tick-6")  # type: ignore[attr-defined]
            assert "tick-1" in "\n".join(logs.lines)  # type: ignore[attr-defined]

    run(main)


def test_daemon_refusal_is_shown_not_raised(nvq: Nvq) -> None:
    job = nvq.submit("--name", "done", "--", "true")
    nvq.wait(job["id"])

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: state_shown(app, job["id"]) == "completed", "it")
            app.jobs_table.move_cursor(row=app.jobs_table.get_row_index(str(job["id"])))
            await pilot.press("p")  # a finished job cannot be paused
            await until(pilot, lambda: bool(app.status_text), "an error line")
            assert str(job["id"]) in app.status_text or "cannot" in app.status_text
            assert app.is_running

    run(main)


def test_a_waiting_job_shows_why_and_a_node_drains_from_the_ui(nvq: Nvq) -> None:
    for name in ("big-0", "big-1"):
        nvq.submit("--name", name, "--vram", "20GiB", "--", "sleep", "60")
    waiter = nvq.submit("--name", "waiter", "--vram", "20GiB", "--", "sleep", "60")

    async def main() -> None:
        app = QueueApp(AsyncClient(nvq.home))
        async with app.run_test(size=SIZE) as pilot:
            await until(
                pilot,
                lambda: (row_of(app, waiter["id"]) or [""])[-1].startswith("Resources"),
                "the waiting job's reason",
            )
            await until(pilot, lambda: app.nodes_table.row_count > 0, "the nodes")
            app.nodes_table.focus()
            await pilot.press("d")
            await pilot.pause()
            assert type(app.screen).__name__ == "ConfirmScreen"
            await pilot.press("y")
            await until(pilot, lambda: "draining" in app.status_text, "the drain")
            await until(pilot, lambda: "[draining]" in str(app.nodes_table.get_row_at(0)[0]), "it")

    run(main)
    assert nvq.json("queue", "nodes")["nodes"][0]["drained"] is True


def test_a_job_on_an_unreachable_node_counts_down_as_job_ls_does(
    tmp_path: Path, sshd_nodes: SshdNodesFactory
) -> None:
    """The jobs panel shows a running job whose node is out of reach as `unreachable,
    reassign in ...`, counted to the moment `job ls --json`'s `unreachable` map gives,
    and `running` again once the node is back."""
    (node,) = sshd_nodes(1)
    nvq = make_nvq(tmp_path / "q")
    try:
        write_mesh_config(nvq, [node])
        config = nvq.home / "config.toml"
        config.write_text(config.read_text().replace('node_grace = "2s"', 'node_grace = "1h"'))
        gate = tmp_path / "gate"
        job = nvq.submit("--vram", "2GiB", "--", f"while [ ! -e {gate} ]; do sleep 0.05; done")
        nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["started_at"])
        now = time.time()

        async def main() -> None:
            app = QueueApp(AsyncClient(nvq.home), clock=lambda: now)
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: state_shown(app, job["id"]) == "running", "running")
                node.kill_all()  # sshd and its sessions die; the runner and the job go on
                away: dict[str, float] = {}

                def listed() -> bool:
                    away.update(nvq.json("job", "ls").get("unreachable") or {})
                    return "n0" in away

                while not await asyncio.to_thread(listed):
                    await pilot.pause(0.1)
                want = f"unreachable, reassign in {format_duration(away['n0'] - now)}"
                await until(pilot, lambda: state_shown(app, job["id"]) == want, want)
                node.start()
                await until(pilot, lambda: state_shown(app, job["id"]) == "running", "back")

        run(main)
        gate.touch()
        assert nvq.wait(job["id"], timeout=60)[0] == 0
    finally:
        nvq.shutdown()
