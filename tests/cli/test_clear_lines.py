"""Bad input and broken surroundings give one clear line and a non-zero exit, never a
traceback, and change nothing; what a job's submitter wrote is printed escaped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster import Nvq, make_nvq


def _one_line(text: str) -> str:
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["job", "submit", "--priority", str(2**63), "--", "true"],
        ["job", "show", str(2**64)],
        ["job", "cancel", str(2**63)],
        ["job", "submit", "--env", "=1", "--", "true"],
        ["job", "submit", "--env", "CUDA_VISIBLE_DEVICES=1", "--", "true"],
        ["job", "submit", "--env", "NVQ_JOB_ID=7", "--", "true"],
        ["job", "submit", "--timeout", "nan", "--", "true"],
    ],
)
def test_bad_values_are_refused_with_one_line(nvq: Nvq, args: list[str]) -> None:
    r = nvq.run(*args)
    assert r.code != 0
    _one_line(r.err)
    listed = nvq.run("job", "ls", "--json")
    assert listed.code == 0 and listed.json() == {"jobs": [], "more": False}


def test_a_home_path_too_long_for_a_socket_says_so(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    q = make_nvq(deep)
    try:
        r = q.run("queue", "status")
        assert r.code != 0
        line = _one_line(r.err)
        assert "NVQ_HOME" in line and "too long" in line
    finally:
        q.shutdown()


def _has_socket(pid: int) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd).startswith("socket:") for fd in fds.iterdir())
    except OSError:
        return False


def test_a_daemon_killed_while_a_request_waits_is_one_line(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "sleep", "300")
    waiter = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "wait", str(job["id"])],
        env=nvq.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    # Kill only once the waiter is connected: a waiter that connects later would start
    # a fresh daemon and wait on (that is its job), not see one die under it.
    deadline = time.monotonic() + 30
    while not _has_socket(waiter.pid):
        assert time.monotonic() < deadline, "the waiter never connected"
        time.sleep(0.05)
    time.sleep(0.3)  # its request sent and taken
    pid = int((nvq.home / "daemon.pid").read_text())
    os.kill(pid, 9)
    _out, err = waiter.communicate(timeout=30)
    assert waiter.returncode not in (0, None)
    _one_line(err)


def test_names_with_escapes_are_refused_and_commands_printed_escaped(nvq: Nvq) -> None:
    refused = nvq.run("job", "submit", "--gpus", "0", "--name", "a\x1b[31mred", "--", "true")
    assert refused.code == 2 and "control character" in _one_line(refused.err)
    # A command may hold anything; printed to a terminal it is escaped.
    job = nvq.submit("--gpus", "0", "--name", "esc", "--", "echo", "a\x1b[31mred\x07")
    for args in (["job", "ls"], ["job", "show", str(job["id"])]):
        out = nvq.ok(*args).out
        assert "\x1b" not in out and "\x07" not in out
    out = nvq.ok("job", "show", str(job["id"])).out
    assert "\\x1b" in out or "\\e" in out or "^[" in out
    # JSON keeps the real value.
    assert "a\x1b[31mred\x07" in nvq.show(job["id"])["command"]


@pytest.mark.parametrize(
    "line", ['node_grace = "0"', 'artifact_sync = "0s"', 'kill_grace = "99999999999d"']
)
def test_config_values_that_make_no_sense_are_refused(nvq: Nvq, line: str) -> None:
    nvq.write_config(f"[queue]\n{line}\n")
    r = nvq.run("queue", "status")
    assert r.code != 0
    msg = _one_line(r.err)
    assert line.split(" ")[0] in msg
