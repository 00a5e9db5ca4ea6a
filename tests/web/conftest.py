"""The page in a real browser: Debian's chromium driven by Playwright (never
Playwright's own browser download), and a real `nvq web` process in front of the
`nvq` fixture's daemon."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Nvq

SCREENSHOTS = Path(__file__).resolve().parents[1] / ".artifacts" / "web"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Web:
    url: str  # with the token, as `nvq web` printed it
    base: str  # without it
    proc: subprocess.Popen[str]


def start_web(nvq: Nvq, *extra: str) -> Web:
    proc = subprocess.Popen(
        [sys.executable, "-m", "nvq", "web", "--port", "0", *extra],
        env=nvq.env,
        stdout=subprocess.PIPE,
        stderr=open(nvq.home.parent / "web.err", "w"),  # noqa: SIM115 - the child keeps it
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    if not first.startswith("http://"):
        proc.kill()
        err = (nvq.home.parent / "web.err").read_text()
        raise AssertionError(f"nvq web printed {first!r} first: {err}")
    return Web(url=first, base=first.split("/?token=", 1)[0], proc=proc)


def stop_web(web: Web) -> None:
    web.proc.terminate()
    try:
        web.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        web.proc.kill()
        web.proc.wait()


@pytest.fixture
def web(nvq: Nvq) -> Iterator[Web]:
    """`nvq web --port 0` on the fixture's home; stopped after the test."""
    nvq.env["NVQ_GPU_HISTORY_EVERY"] = "0.5"  # the Nodes chart gets points within the test
    nvq.ok("queue", "status")  # the daemon first, so the page finds it running
    w = start_web(nvq)
    try:
        yield w
    finally:
        stop_web(w)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module scope, not session: while Playwright's sync API is open its event loop
    # counts as running in this thread, and a later test in the same worker that
    # starts its own loop (anyio.run) would be refused.
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no system chromium (apt-get install chromium): the page tests need a browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, web: Web) -> Iterator[Any]:
    """A fresh browser context that opened the printed URL (so it holds the cookie)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    p = context.new_page()
    p.set_default_timeout(30_000)
    p.goto(web.url)
    try:
        yield p
    finally:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
