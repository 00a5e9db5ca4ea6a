"""`queue restore` with the keeper installed: the keeper would start the daemon again
the moment it stopped, so the restore pauses its restarts, stops the daemon itself,
and the keeper brings the daemon back on the restored queue."""

from __future__ import annotations

import time

from tests.cluster import Nvq


def _daemon_pid(nvq: Nvq) -> int | None:
    try:
        return int((nvq.home / "daemon.pid").read_text())
    except (OSError, ValueError):
        return None


def _until(what: str, check: object) -> None:
    deadline = time.monotonic() + 30
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_restore_pauses_the_keeper_and_it_brings_the_daemon_back(nvq: Nvq) -> None:
    first = [nvq.submit("--gpus", "0", "--", "true") for _ in range(2)]
    nvq.wait(*(j["id"] for j in first))
    snap = nvq.json("queue", "backup")["path"]
    later = nvq.submit("--gpus", "0", "--", "true")
    nvq.wait(later["id"])
    nvq.ok("daemon", "stop")
    nvq.json("queue", "keeper", "install", "--start")
    try:
        _until("the keeper starts a daemon", lambda: _daemon_pid(nvq) is not None)
        before = _daemon_pid(nvq)
        r = nvq.ok("queue", "restore", snap)
        assert r.out.startswith("restored ")
        assert r.out.rstrip().endswith(
            "; the keeper (supervisor) was paused for it and starts the daemon again"
        )
        assert not (nvq.home / "keeper.paused").exists()
        _until("a new daemon", lambda: _daemon_pid(nvq) not in (None, before))
        assert [j["id"] for j in nvq.json("job", "ls")["jobs"]] == [j["id"] for j in first]
        assert "a daemon is already running" not in nvq.ok("queue", "keeper", "logs").out
    finally:
        nvq.json("queue", "keeper", "stop")
