"""`nvq queue` in a real terminal: tmux runs `python -m nvq queue` as a person would,
and the screen it draws is read back with `capture-pane`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.cluster import Nvq

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, nvq: Nvq) -> None:
        # a private server per test: nothing shared with a person's own tmux
        self.socket = str(nvq.home.parent / "tmux.sock")
        # the terminal's size is tmux's window, not whatever COLUMNS this process has
        self.env = {k: v for k, v in nvq.env.items() if k not in ("COLUMNS", "LINES")}
        self.env["TERM"] = "xterm-256color"

    def __call__(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-S", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    def until(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")
            time.sleep(0.2)


@pytest.fixture
def tmux(nvq: Nvq) -> Iterator[Tmux]:
    t = Tmux(nvq)
    yield t
    subprocess.run(["tmux", "-S", t.socket, "kill-server"], capture_output=True, timeout=30)


def test_queue_opens_the_ui_in_a_terminal_and_shows_a_job(nvq: Nvq, tmux: Tmux) -> None:
    job = nvq.submit("--name", "in-tmux", "--", "sleep", "60")
    tmux(
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "200",
        "-y",
        "50",
        f"{sys.executable} -m nvq queue",
    )
    screen = tmux.until("in-tmux")
    assert "MEMORY" in screen  # the nodes panel's header
    # a job submitted while it is open appears without a key pressed
    later = nvq.submit("--name", "moth-job", "--", "sleep", "60")
    tmux.until("moth-job")
    # the filter narrows the list to the words typed
    # one key per call: the app moves the focus to the filter before the words arrive
    tmux("send-keys", "-t", "tui", "/")
    time.sleep(1)  # pacing, not a measurement: a typed word must reach the filter
    tmux("send-keys", "-t", "tui", "moth")
    screen = tmux.screen()
    deadline = time.monotonic() + 30
    while "in-tmux" in screen and time.monotonic() < deadline:
        time.sleep(0.2)
        screen = tmux.screen()
    assert "moth-job" in screen and "in-tmux" not in screen, screen
    assert str(later["id"]) in screen and job["id"] != later["id"]
    tmux("send-keys", "-t", "tui", "q")


def test_bare_queue_without_a_terminal_prints_its_help(nvq: Nvq) -> None:
    r = nvq.run("queue")
    assert r.code == 2
    assert r.out.startswith("Usage: nvq queue [OPTIONS] [COMMAND] [ARGS]...")
    assert "  status " in r.out and "events" in r.out
