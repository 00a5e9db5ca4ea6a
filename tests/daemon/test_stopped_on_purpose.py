"""`nvq daemon stop` leaves a mark: clients that only observe (the web page, `queue
events --follow`, the MCP server's reads) never start the daemon again; `nvq daemon
start` or the next command that needs it does, clears the mark and says so."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import anyio

from nvq.home import Home
from tests.cluster import Nvq
from tests.web.conftest import start_web, stop_web


def _no_daemon(nvq: Nvq) -> bool:
    return Home(nvq.home).read_pid() is None and not Home(nvq.home).socket.exists()


def test_observers_leave_a_stopped_daemon_stopped(nvq: Nvq) -> None:
    nvq.ok("queue", "status")
    nvq.ok("daemon", "stop")
    assert (nvq.home / "daemon.stopped").exists()

    web = start_web(nvq)
    try:
        try:
            urllib.request.urlopen(web.url, timeout=60).read()
        except OSError:
            pass  # whatever the page says, it must not have started a daemon
    finally:
        stop_web(web)
    assert _no_daemon(nvq)

    follow = subprocess.run(
        [sys.executable, "-m", "nvq", "queue", "events", "--follow"],
        env=nvq.env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert follow.returncode != 0, follow
    assert "stopped by `nvq daemon stop` at " in follow.stderr, follow.stderr
    assert "`nvq daemon start` starts it" in follow.stderr
    assert _no_daemon(nvq)

    # The MCP server's read tools run the CLI as observers.
    from nvq.agents.mcp_server import nvq_json

    env_home = nvq.env.get("NVQ_HOME")
    assert env_home is not None
    import os

    saved = dict(os.environ)
    os.environ.update(nvq.env)
    try:
        try:
            anyio.run(nvq_json, "queue", "status")
        except Exception as exc:  # a tool error: the daemon's absence, said
            assert "nvq daemon start" in str(exc), exc
        else:
            raise AssertionError("queue_status answered with no daemon")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert _no_daemon(nvq)

    # A command that needs the daemon starts it, and says it was stopped on purpose.
    r = nvq.ok("job", "submit", "--gpus", "0", "--", "true")
    assert "nvq: starting the daemon, stopped by `nvq daemon stop` at " in r.err, r.err
    assert not (nvq.home / "daemon.stopped").exists()

    nvq.ok("daemon", "stop")
    started = nvq.ok("daemon", "start").out
    assert started.startswith("daemon ") and "started (it was stopped by `nvq daemon stop`" in started
    assert not (nvq.home / "daemon.stopped").exists()
    assert "is already running" in nvq.ok("daemon", "start").out
