"""`nvq queue` in a real terminal: tmux runs `python -m nvq queue` as a person would,
and the screen it draws is read back with `capture-pane`."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Nvq
from tests.harness.tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmux(nvq: Nvq) -> Iterator[Tmux]:
    t = Tmux(nvq.home.parent / "tmux.sock", nvq.env)
    yield t
    t.close()


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


def test_a_running_jobs_progress_and_both_streams_show_live_in_a_terminal(
    nvq: Nvq, tmux: Tmux, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    job = nvq.submit(
        "--gpus", "0", "--name", "live-one", "--",
        'echo "step 1/200" > "$NVQ_STATUS_FILE"; echo out-line; echo err-line >&2; '
        f"while [ ! -e {go} ]; do sleep 0.05; done; "
        'echo "step 2/200" > "$NVQ_STATUS_FILE"; sleep 600',
    )
    tmux("new-session", "-d", "-s", "tui", "-x", "200", "-y", "50",
         f"{sys.executable} -m nvq queue")
    tmux.until("step 1/200")
    tmux.until("err| err-line")  # the selected job's log pane: both streams, marked
    assert "out| out-line" in tmux.screen()
    go.touch()
    tmux.until("step 2/200")  # no key pressed, no event: the app reads it
    tmux("send-keys", "-t", "tui", "q")
    nvq.ok("job", "cancel", str(job["id"]))


# Scrollbar thumbs' ends: eighth blocks. The filter's border (▊▎▔▁ on its own rows)
# and the footer's palette mark (▏) are no scrollbar; the GPU bars use █▒░.
SCROLLBAR_GLYPHS = set("▁▂▃▄▅▆▇▏▎▍▌▋▊▉")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)], ids=str)
def test_no_stray_scrollbar_glyphs_with_many_jobs_and_long_lines(
    nvq: Nvq, tmux: Tmux, size: tuple[int, int]
) -> None:
    nvq.submit(
        "--gpus", "0", "--name", "wide", "--",
        "for i in $(seq 1 60); do printf 'out %s %0300d\\n' $i 0; "
        "printf 'err %s %0250d\\n' $i 0 >&2; done; sleep 600",
    )
    nvq.submit("--gpus", "0", "--array", "0-39", "--name", "many", "--", "sleep 600")
    width, height = size
    tmux("new-session", "-d", "-s", "tui", "-x", str(width), "-y", str(height),
         f"{sys.executable} -m nvq queue")
    screen = tmux.until("err| err 60")  # the selected job's log pane, full of long lines
    rows = screen.splitlines()
    body = [r for r in rows[:-1] if not r.startswith("▊")]
    stray = [r for r in body if SCROLLBAR_GLYPHS & set(r)]
    assert not stray, screen
    tmux("send-keys", "-t", "tui", "q")
