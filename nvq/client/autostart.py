"""Starting the daemon when a client finds none: detached from the caller, and waited
for until its socket answers."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

from nvq.client.errors import ClientError, DaemonUnavailable
from nvq.home import Home, socket_path_problem

START_TIMEOUT = 20.0


def check_socket_path(path: Path) -> None:
    """A home whose socket path a Unix socket cannot hold fails with the fix, not with
    the kernel's "AF_UNIX path too long"."""
    problem = socket_path_problem(path)
    if problem is not None:
        raise ClientError(problem, 2)


def refused(path: Path) -> DaemonUnavailable:
    return DaemonUnavailable(
        f"permission denied on the queue's socket {path}: only its owner and the members "
        "of its [queue] members_group may use this queue"
    )


def connect_unix(path: Path) -> socket.socket:
    check_socket_path(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except PermissionError:
        s.close()
        raise refused(path) from None
    except OSError:
        s.close()
        raise
    return s


def not_running_here(root: Path) -> DaemonUnavailable | None:
    """Why this user may not start the queue of `root`: a home of another user (a lab
    member's `NVQ_HOME` points at the owner's) is that user's queue, and its daemon
    runs as them; started by a member it would run as the member, or stop at the
    owner's unreadable config. None when the home is this user's or not there yet."""
    import os

    try:
        uid = root.stat().st_uid
    except FileNotFoundError:
        return None
    except OSError as exc:  # a parent this user may not enter: not theirs either
        return DaemonUnavailable(f"the queue at {root} is not running, and {exc.strerror} "
                                 "reading its home: ask the person who runs it")
    if uid == os.geteuid():
        return None
    import pwd

    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = f"uid {uid}"
    return DaemonUnavailable(
        f"the queue at {root} is not running; only its owner {owner} can start it "
        f"(any nvq command of theirs, or `nvq queue keeper install --start` to keep it up)"
    )


def start_daemon(root: Path, *, observing: bool = False) -> None:
    """Start `nvq daemon` for `root` and return once it accepts connections. A client
    that only observes (`observing`) starts none that was stopped on purpose."""
    from nvq.client.stop_mark import before_start
    from nvq.config import ConfigError, load_config
    from nvq.detach import spawn_detached  # subprocess: only when starting one

    theirs = not_running_here(root)
    if theirs is not None:
        raise theirs
    before_start(root, observing=observing)
    try:
        load_config(root)
    except ConfigError as exc:
        raise ClientError(str(exc), 2) from None
    home = Home(root)
    check_socket_path(home.socket)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    wait_answering(root, spawn_detached("nvq.daemon.main", root, home.log))


def wait_answering(root: Path, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Wait for the daemon `proc` is (None: one the keeper starts) to accept connections."""
    home = Home(root)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            connect_unix(home.socket).close()
            return
        except OSError:
            pass
        code = None if proc is None else proc.poll()
        # Exit 3 means another client won the race and its daemon is starting: keep waiting.
        if code is not None and code != 3:
            raise DaemonUnavailable(f"the daemon failed to start: {_last_line(home.log)}")
        time.sleep(0.02)
    raise DaemonUnavailable(f"the daemon did not start within {START_TIMEOUT:g}s; see {home.log}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"
