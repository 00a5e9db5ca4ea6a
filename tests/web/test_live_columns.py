"""The web pages left open in a real browser: a running job's progress and runtime
move without a reload, on the Jobs page and on the job's own page; the page's clock
is moved, not waited for."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from nvq.client import Client
from nvq.domain.report import ReportRow
from nvq.web.pages import chart_span, usage_bars
from tests.cluster import Nvq

WAIT = 30_000


def _job(nvq: Nvq, go: Path) -> int:
    job = nvq.submit(
        "--gpus", "0", "--name", "trainer", "--",
        f'echo "step 1/200" > "$NVQ_STATUS_FILE"; while [ ! -e {go} ]; do sleep 0.05; done; '
        'echo "step 2/200" > "$NVQ_STATUS_FILE"; sleep 600',
    )  # fmt: skip
    return int(job["id"])


def test_progress_and_runtime_move_on_the_jobs_page(nvq: Nvq, page: Any, tmp_path: Path) -> None:
    go = tmp_path / "go"
    jid = _job(nvq, go)
    page.clock.install()
    page.reload()
    row = page.locator(f'#active tr[data-job="{jid}"]')
    expect(row.locator("td.progress")).to_have_text("step 1/200", timeout=WAIT)
    page.clock.fast_forward("02:00:00")
    expect(row.locator("td.runtime")).to_contain_text("2h", timeout=WAIT)
    go.touch()  # the job's progress moves; no event says so
    for _ in range(60):
        page.clock.fast_forward(5_000)
        if row.locator("td.progress").inner_text() == "step 2/200":
            break
        page.wait_for_timeout(200)  # pacing the reads, not a measurement
    expect(row.locator("td.progress")).to_have_text("step 2/200", timeout=WAIT)
    nvq.ok("job", "cancel", str(jid))


def test_progress_and_runtime_move_on_a_jobs_page(nvq: Nvq, page: Any, tmp_path: Path) -> None:
    go = tmp_path / "go"
    jid = _job(nvq, go)
    page.clock.install()
    page.goto(page.url.split("?")[0].rstrip("/") + f"/jobs/{jid}")
    expect(page.locator("#job-progress")).to_have_text("step 1/200", timeout=WAIT)
    page.clock.fast_forward("03:00:00")
    expect(page.locator("#job-runtime")).to_contain_text("3h", timeout=WAIT)
    expect(page.locator('#attempts tr[data-attempt="1"] td.runtime')).to_contain_text("3h")
    go.touch()
    for _ in range(60):
        page.clock.fast_forward(5_000)
        if page.locator("#job-progress").inner_text() == "step 2/200":
            break
        page.wait_for_timeout(200)
    expect(page.locator("#job-progress")).to_have_text("step 2/200", timeout=WAIT)
    nvq.ok("job", "cancel", str(jid))


def test_the_nodes_page_picks_its_window_from_the_history_it_has(
    nvq: Nvq, page: Any, web: Any
) -> None:
    client = Client(nvq.home)
    deadline = time.monotonic() + 30
    while len(client.gpu_history()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # minutes-young queue: a few samples, seconds apart
    page.goto(f"{web.base}/nodes")
    expect(page.locator("#nodes thead")).to_contain_text("LAST 1 H")
    chart = page.locator('#nodes tr[data-node="local"][data-gpu="0"] svg.chart')
    expect(chart).to_have_attribute("aria-label", "memory in use and utilisation over the last 1 h")
    # the samples span the chart's hour, not a two-pixel sliver of a day
    assert int(chart.get_attribute("data-points") or 0) >= 1


def test_chart_windows_and_usage_bars() -> None:
    now = 1_000_000.0
    assert chart_span(None, now)[1] == "1 h"
    assert chart_span(now - 600, now)[1] == "1 h"
    assert chart_span(now - 7200, now)[1] == "24 h"
    assert chart_span(now - 3 * 86400, now)[1] == "7 d"
    rows = [_row("ana", 10.0, 5.0), _row("bo", 10.0, 0.001)]
    assert usage_bars(rows) == {"ana": 50.0, "bo": 0.0}


def _row(key: str, reserved: float, used: float) -> ReportRow:
    return ReportRow(key=key, gpu_hours_reserved=reserved, gpu_hours_used=used)
