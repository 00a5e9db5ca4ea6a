"""The keeper through the real CLI: a detached supervisor that restarts the daemon,
and the systemd user unit it writes when systemctl is absent."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.cluster import Nvq


def _daemon_pid(nvq: Nvq) -> int | None:
    try:
        return int((nvq.home / "daemon.pid").read_text())
    except (OSError, ValueError):
        return None


def test_supervisor_restarts_the_daemon(nvq: Nvq) -> None:
    assert nvq.run("queue", "keeper", "status").code == 1
    doc = nvq.json("queue", "keeper", "install", "--start")
    assert doc["kind"] == "supervisor" and doc["pid"]
    st = nvq.run("queue", "keeper", "status", "--json")
    assert st.code == 0 and st.json()["up"] is True
    try:
        deadline = time.monotonic() + 20
        while _daemon_pid(nvq) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        first = _daemon_pid(nvq)
        assert first is not None
        status = nvq.json("queue", "status")
        assert status["keeper"]["up"] is True and status["daemon"]["pid"] == first
        assert "keeper up (supervisor" in nvq.ok("queue", "status").out

        os.kill(first, signal.SIGKILL)  # the daemon dies: the keeper brings it back
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pid = _daemon_pid(nvq)
            if pid not in (None, first) and (nvq.home / "daemon.sock").exists():
                break
            time.sleep(0.05)
        status = nvq.json("queue", "status")
        assert status["daemon"]["pid"] not in (None, first)
        assert "restarting" in nvq.ok("queue", "keeper", "logs", "-n", "5").out
    finally:
        stopped = nvq.json("queue", "keeper", "stop")
    assert stopped["stopped"] is True
    assert nvq.run("queue", "keeper", "status").code == 1
    assert "keeper DOWN" in nvq.ok("queue", "status").out


def test_systemd_unit_is_written_when_systemctl_is_absent(nvq: Nvq, tmp_path: Path) -> None:
    nvq.env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    nvq.env["PATH"] = str(tmp_path / "empty-path")
    doc = nvq.json("queue", "keeper", "install", "--systemd")
    unit = Path(doc["unit_path"])
    assert unit.parent == tmp_path / "xdg" / "systemd" / "user"
    text = unit.read_text()
    assert f"Environment=NVQ_HOME={nvq.home.resolve()}" in text
    assert f"-m nvq.daemon.main {nvq.home.resolve()}" in text
    assert "Restart=always" in text and "WantedBy=default.target" in text
    assert "RestartPreventExitStatus=4" in text  # `nvq daemon stop` stays stopped
    assert doc["enabled"] is False and "systemctl not found" in doc["note"]
    assert nvq.run("queue", "keeper", "status").code == 1


def _wait_keeper_log(nvq: Nvq, line: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while line not in (nvq.home / "keeper.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, f"keeper.log never said {line!r}"
        time.sleep(0.05)


def _wait_new_daemon(nvq: Nvq, old: int | None, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while True:
        pid = _daemon_pid(nvq)
        if pid not in (None, old) and (nvq.home / "daemon.sock").exists():
            return pid
        assert time.monotonic() < deadline, "no new daemon"
        time.sleep(0.05)


def test_a_planned_stop_stays_stopped_with_a_keeper(nvq: Nvq) -> None:
    """`nvq daemon stop` is not undone by the keeper; `nvq daemon start` brings the
    keeper's daemon back, and a crash of that one is still restarted."""
    nvq.json("queue", "keeper", "install", "--start")
    try:
        first = _wait_new_daemon(nvq, None)
        assert nvq.json("daemon", "stop")["stopped"] is True
        _wait_keeper_log(nvq, "waiting for `nvq daemon start`")
        assert _daemon_pid(nvq) is None  # the keeper started none
        assert not (nvq.home / "daemon.sock").exists()
        assert nvq.json("queue", "keeper", "status")["up"] is True

        started = nvq.run("daemon", "start")
        assert started.code == 0 and "stopped by `nvq daemon stop`" in started.out
        second = _daemon_pid(nvq)
        assert second not in (None, first)
        keeper_pid = nvq.json("queue", "keeper", "status")["pid"]
        ppid = int(Path(f"/proc/{second}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert ppid == keeper_pid  # the keeper's own daemon, not one the CLI spawned

        os.kill(second, signal.SIGKILL)  # a crash is still restarted
        third = _wait_new_daemon(nvq, second)
        assert nvq.json("queue", "status")["daemon"]["pid"] == third
    finally:
        nvq.json("queue", "keeper", "stop")
        nvq.run("daemon", "stop")
