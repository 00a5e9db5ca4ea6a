"""Finding, starting and stopping the runner of a home. Stdlib only and cheap to
import: `attach` runs this on every SSH connection, and the daemon calls
`ensure_running` for its local node."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .errors import NvqRunnerError

SOCKET = "runner.sock"


class RunnerError(NvqRunnerError):
    """The runner could not be started or reached."""


def socket_path(home: Path) -> Path:
    return home.expanduser() / SOCKET


def connect(home: Path, timeout: float | None = None) -> socket.socket:
    """A connected socket to the runner of `home`; raises OSError when none listens."""
    return connect_path(socket_path(home), timeout)


def connect_path(path: Path, timeout: float | None = None) -> socket.socket:
    """A connected socket to the Unix socket at `path`; raises OSError when none
    listens. Paths too long for sockaddr_un are reached through /proc/self/fd."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        if len(os.fsencode(path)) < 100:
            sock.connect(str(path))
        else:
            dfd = os.open(path.parent, os.O_PATH)
            try:
                sock.connect(f"/proc/self/fd/{dfd}/{path.name}")
            finally:
                os.close(dfd)
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def is_running(home: Path) -> bool:
    try:
        connect(home, timeout=2.0).close()
    except OSError:
        return False
    return True


def _log_tail(home: Path) -> str:
    try:
        with open(home / "runner.log", "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 2000))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def ensure_running(
    home: Path, env: dict[str, str] | None = None, timeout: float = 10.0
) -> Path:
    """Start the runner of `home` unless one already answers; return its socket path.
    `env` is extra environment for a runner started now (an existing one keeps its
    own). Costs one connect when the runner is up."""
    home = home.expanduser()
    if is_running(home):
        return socket_path(home)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(home / "runner.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as logf:
        # `serve --detach` forks once it holds the lock and its parent exits at once,
        # so the runner is nobody's child and we reap the intermediate here.
        proc = subprocess.Popen(
            [sys.executable, "-m", "nvq_runner", "serve", "--home", str(home), "--detach"],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + timeout
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise RunnerError(f"runner for {home} did not start:\n{_log_tail(home)}") from None
    if rc != 0:
        raise RunnerError(f"runner for {home} exited with {rc}:\n{_log_tail(home)}")
    while time.monotonic() < deadline:
        if is_running(home):
            return socket_path(home)
        time.sleep(0.02)
    raise RunnerError(f"runner for {home} did not answer in {timeout:g}s:\n{_log_tail(home)}")


def runner_pid(home: Path) -> int | None:
    """The pid in runner.pid, if that process is alive and is a runner."""
    try:
        pid = int((home.expanduser() / "runner.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"nvq_runner" in cmdline else None


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def stop(home: Path, timeout: float = 10.0) -> bool:
    """SIGTERM the runner and wait until it is gone (SIGKILL after `timeout`). Jobs keep
    running. Returns False when no runner was running."""
    pid = runner_pid(home)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
        time.sleep(0.02)
    return True
