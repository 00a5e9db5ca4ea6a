"""A daemon that runs out of file descriptors refuses new connections for a moment,
says so in its log, and keeps serving once descriptors are free again."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time

from tests.cluster import Nvq

LIMIT = 64


def _limit_descriptors() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, hard))


def test_the_daemon_survives_running_out_of_descriptors(nvq: Nvq) -> None:
    daemon = subprocess.Popen(
        [sys.executable, "-m", "nvq", "daemon"], env=nvq.env, preexec_fn=_limit_descriptors,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (nvq.home / "daemon.sock").exists():
            assert daemon.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        nvq.ok("queue", "status")
        held = []
        for _ in range(2 * LIMIT):  # more connections than the daemon has descriptors
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(str(nvq.home / "daemon.sock"))
            held.append(s)
        log = nvq.home / "daemon.log"
        deadline = time.monotonic() + 30
        while "cannot accept connections" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        for s in held:
            s.close()
        assert daemon.poll() is None, "the daemon died"
        job = nvq.submit("--gpus", "0", "--", "true")
        code, _ = nvq.wait(job["id"])
        assert code == 0
        assert daemon.poll() is None
    finally:
        if daemon.poll() is None:
            os.kill(daemon.pid, 15)
        daemon.wait(timeout=30)
