"""The TUI and the web page from a laptop over `[remote]`: `nvq queue` runs on the
queue host in a pty of its own (`ssh -t`), drawn in the laptop's terminal; `nvq web`
serves the page there and tunnels its port here, printing this machine's URL."""

from __future__ import annotations

import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.cli.test_job_shell import nvq_in_tmux
from tests.cli.test_remote import eventually, trio  # noqa: F401 - the fixture
from tests.cli.test_remote_hangup import gone, on_queue_host
from tests.cluster import Nvq
from tests.harness.sshd import SshdNode
from tests.harness.tmux import Tmux


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_tui_runs_over_remote_in_the_laptops_terminal(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    laptop.submit("--gpus", "0", "--no-snapshot", "--name", "from-the-laptop", "--", "sleep", "600")
    t = Tmux(laptop.home.parent / "tmux.sock", laptop.env, session="tui")
    try:
        t.start(nvq_in_tmux(laptop, "queue"))
        t.until("from-the-laptop")
        assert on_queue_host(host, "queue"), "the UI runs on the queue host"
        t.keys("q")
        t.until("nvq-exited=0")
    finally:
        t.close()
    # without a terminal it is what the queue host says to a script: the group's help
    r = laptop.run("queue")
    assert r.code == 2 and r.out.startswith("Usage: nvq queue")


def test_web_over_remote_prints_a_url_of_this_machine(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--name", "seen-on-the-page", "--",
                        "sleep", "600")
    web = subprocess.Popen(
        [sys.executable, "-m", "nvq", "web", "--json", "--port", "0"], env=laptop.env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    try:
        assert web.stdout is not None
        doc = json.loads(web.stdout.readline())
        assert set(doc) == {"url", "port", "pid"}
        # this machine's port, held by the laptop's own `nvq web`
        assert doc["pid"] == web.pid and doc["url"].startswith(f"http://127.0.0.1:{doc['port']}/?token=")
        there = on_queue_host(host, "web")
        assert there, "the page is served on the queue host"
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        for _ in range(2):  # each connection is relayed on its own
            with browser.open(doc["url"], timeout=30) as resp:
                assert resp.status == 200
        base = doc["url"].split("?", 1)[0]
        with browser.open(f"{base}jobs/{job['id']}", timeout=30) as resp:
            assert b"seen-on-the-page" in resp.read()
    finally:
        os.killpg(web.pid, signal.SIGINT)  # Ctrl-C in the laptop's terminal
    assert web.wait(timeout=60) == 0
    eventually(lambda: gone(there), "the page stopped on the queue host")
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(doc["url"], timeout=30)


def test_web_over_remote_ends_when_the_page_there_does(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    web = subprocess.Popen(
        [sys.executable, "-m", "nvq", "web", "--port", "0"], env=laptop.env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    try:
        assert web.stdout is not None
        url = web.stdout.readline()
        assert url.startswith("http://127.0.0.1:") and "token=" in url
        (there,) = on_queue_host(host, "web")
        os.kill(there, signal.SIGKILL)  # the queue host's page is gone
        assert web.wait(timeout=60) != 0
    finally:
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGKILL)
    assert web.stderr is not None
    assert "reached through this machine" in web.stderr.read()
