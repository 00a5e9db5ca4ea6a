"""Text as people read it: moments as a clock shows them (epoch seconds only in
JSON), counts with their noun's number, and a `job logs -f` that goes away while
its job still waits is no error in the daemon's log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from nvq.home import Home
from nvq.values import counted
from tests.cluster import Nvq

EPOCH = re.compile(r"\b1\d{9}(\.\d+)?\b")


def test_job_show_and_queue_events_print_moments_not_epoch_seconds(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "exit 2")
    nvq.wait(job["id"])
    shown = nvq.ok("job", "show", str(job["id"])).out
    events = nvq.ok("queue", "events").out
    for text in (shown, events):
        assert not EPOCH.search(text), text
    assert re.search(r"ended_at=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", events), events
    # JSON keeps the number
    (failed,) = [e for e in nvq.json("queue", "events")["events"] if e["kind"] == "job_failed"]
    assert isinstance(failed["data"]["ended_at"], float)


def test_counts_take_their_nouns_number() -> None:
    assert [counted(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert counted(1, "GPU") == "1 GPU"


def _sockets(pid: int) -> int:
    fds = os.listdir(f"/proc/{pid}/fd")
    return sum(1 for fd in fds if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"))


def test_a_follower_going_away_before_its_job_starts_is_no_error(nvq: Nvq) -> None:
    first = nvq.submit("--gpus", "0", "--", "sleep", "600")
    later = nvq.submit("--gpus", "0", "--after", str(first["id"]), "--", "true")
    daemon = Home(nvq.home).read_pid()
    assert daemon is not None
    before = _sockets(daemon)
    follower = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "logs", "-f", str(later["id"])],
        env=nvq.env, cwd=nvq.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while _sockets(daemon) <= before and time.monotonic() < deadline:
        time.sleep(0.02)  # until the daemon holds the follower's connection
    follower.kill()
    follower.wait()
    nvq.ok("job", "cancel", str(later["id"]))  # its follower's wait ends here
    nvq.ok("job", "cancel", str(first["id"]))
    while _sockets(daemon) > before and time.monotonic() < deadline + 30:
        time.sleep(0.02)  # until the daemon is done with the follower's connection
    log = (nvq.home / "daemon.log").read_text()
    assert " ERROR " not in log and "Traceback" not in log, log
