"""Ctrl-C on the laptop ends the command on the queue host: over `[remote]` a command
that reads nothing gets a stdin the laptop's `nvq` holds open, and ends when it ends
(a terminal's Ctrl-C, a kill); a terminal command has a pty there, hung up the same
way. Real laptop, real sshd, real signals."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.cli.test_job_shell import nvq_in_tmux
from tests.cli.test_remote import eventually, trio  # noqa: F401 - the fixture
from tests.cluster import Nvq
from tests.harness.sshd import SshdNode
from tests.harness.tmux import Tmux


def on_queue_host(host: Nvq, *words: str) -> list[int]:
    """PIDs of `nvq WORDS…` running against the queue host's home (the laptop's own
    `nvq` has the laptop's NVQ_HOME)."""
    found = []
    mark = f"NVQ_HOME={host.home}".encode()
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in argv]
        if mark in env and "nvq" in text and _has(text, words):
            found.append(int(entry.name))
    return found


def _has(argv: list[str], words: tuple[str, ...]) -> bool:
    n = len(words)
    return any(tuple(argv[i:i + n]) == words for i in range(len(argv) - n + 1))


def gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            return False
    return True


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctrl_c_in_a_terminal_ends_job_wait_on_the_queue_host(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--", "sleep", "600")
    t = Tmux(laptop.home.parent / "tmux.sock", laptop.env, session="wait")
    try:
        t.start(nvq_in_tmux(laptop, f"job wait {job['id']}"))
        there = eventually(lambda: on_queue_host(host, "job", "wait"), "job wait runs there")
        t.keys("C-c")
        t.until("nvq-exited=130")  # as a Ctrl-C of a local `job wait`
        eventually(lambda: gone(there), "job wait ended on the queue host")
    finally:
        t.close()
    assert host.show(job["id"])["state"] == "running"  # a wait's Ctrl-C leaves the job be


def test_a_killed_laptop_call_ends_its_command_there(
    trio: tuple[Nvq, Nvq, SshdNode],  # noqa: F811
) -> None:
    host, laptop, _ = trio
    job = laptop.submit("--gpus", "0", "--no-snapshot", "--", "sleep", "600")
    for sig in (signal.SIGINT, signal.SIGKILL):
        # only the laptop's nvq gets it (not ssh, as a terminal's Ctrl-C would)
        proc = subprocess.Popen(
            [sys.executable, "-m", "nvq", "job", "logs", str(job["id"]), "-f"],
            env=laptop.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        there = eventually(lambda: on_queue_host(host, "job", "logs"), "logs -f runs there")
        os.kill(proc.pid, sig)
        proc.wait(timeout=60)
        eventually(partial(gone, there), f"logs -f ended there after {sig.name}")
    laptop.ok("job", "cancel", str(job["id"]))
