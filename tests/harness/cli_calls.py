"""`nvq ARGV` as a process of its own, the way a test runs it: forked from a zygote that
imported the CLI once (tests/harness/cli_zygote.py says what the child gets), instead
of a fresh interpreter that imports it again for every call.

The caller's side mirrors `subprocess.run(..., capture_output=True, text=True)`: the
call's stdout and stderr are pipes read to their end, `input` is written to its stdin
(else it shares this process's stdin, as a spawned child would), the exit code is the
one its parent reaped (negative for a signal), and past `timeout` the call is killed
and `subprocess.TimeoutExpired` raised.

One zygote per pytest worker and per interpreter environment (the PYTHON*, LANG and
LC_* variables shape an interpreter at start-up, so a call whose differ gets a zygote
started with its own). NVQ_TEST_NO_FORK=1 runs every call as a fresh
`python -m nvq` instead, to compare."""

from __future__ import annotations

import array
import atexit
import io
import json
import locale
import os
import selectors
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZYGOTE = Path(__file__).with_name("cli_zygote.py")
START_TIMEOUT = 180.0  # the zygote's imports, on a loaded machine
NO_FORK = os.environ.get("NVQ_TEST_NO_FORK") == "1"


@dataclass(frozen=True)
class User:
    """Who a call runs as (the daemon sees it through SO_PEERCRED)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str


def _shapes_interpreter(key: str) -> bool:
    if key == "HOME":
        return site.ENABLE_USER_SITE is True  # where the user's site-packages lie
    return key.startswith(("PYTHON", "LC_")) or key in ("LANG", "LANGUAGE")


class Zygote:
    def __init__(self, env: dict[str, str], everything: bool) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="nvq-zygote-"))
        self.path = str(self.dir / "socket")
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE), self.path, "everything" if everything else "cli"],
            env=env,
            cwd="/",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        ready = _read_line(self.proc.stdout.fileno(), time.monotonic() + START_TIMEOUT)
        if ready != b"ready":
            self.close()
            raise RuntimeError(f"the nvq zygote did not start: {ready!r}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # it exits when this closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_zygotes: dict[tuple[bool, tuple[tuple[str, str], ...]], Zygote] = {}
_starting = threading.Lock()  # a test's threads may make their first calls at once


def _zygote(env: dict[str, str], everything: bool) -> Zygote:
    shaping = tuple(sorted((k, v) for k, v in env.items() if _shapes_interpreter(k)))
    key = (everything, shaping)
    with _starting:
        zygote = _zygotes.get(key)
        if zygote is None or not zygote.alive():
            # its environment: what shapes an interpreter, and this one's PATH and HOME
            base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
            zygote = _zygotes[key] = Zygote({**base, **dict(shaping)}, everything)
        return zygote


@atexit.register
def close_zygotes() -> None:
    while _zygotes:
        _zygotes.popitem()[1].close()


def _read_line(fd: int, deadline: float) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            if not sel.select(max(0.0, deadline - time.monotonic())):
                raise TimeoutError
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    return line.strip()


def _text(data: bytes) -> str:
    """Decoded as subprocess's text mode decodes: the locale's encoding, universal
    newlines."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


def run_nvq(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | Path | None = None,
    input: str | None = None,
    timeout: float | None = 60,
    user: User | None = None,
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `nvq ARGV` run with exactly `env` in `cwd`."""
    if NO_FORK and user is None:
        done = subprocess.run([sys.executable, "-m", "nvq", *argv], env=env, cwd=cwd,
                              input=input, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout, done.stderr
    zygote = _zygote(env, everything=user is not None)
    # The call's time starts once its zygote is up: the first call as another user
    # starts one that imports all of nvq, seconds of CPU that two loaded suites on two
    # cores stretched past a minute, and that no `nvq` process of its own would import.
    deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
    request = {"argv": argv, "env": env, "cwd": str(cwd or os.getcwd())}
    if user is not None:
        request["env"] = {**env, "HOME": user.home}
        request["user"] = {"uid": user.uid, "gid": user.gid, "groups": list(user.groups)}
    in_r, in_w = os.pipe() if input is not None else (os.open(os.devnull, os.O_RDONLY), -1)
    if input is None and _usable_fd(0):
        os.close(in_r)
        in_r = os.dup(0)  # the call shares this process's stdin, as a spawned child would
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(zygote.path)
        fds = array.array("i", [in_r, out_w, err_w])
        conn.sendmsg([json.dumps(request).encode() + b"\n"],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    with conn:
        answer = conn.makefile("rb")
        pid = int(answer.readline())
        try:
            out, err = _communicate(in_w, out_r, err_r, input, deadline,
                                    on_timeout=lambda: os.kill(pid, signal.SIGUSR2))
        except CallTimedOut as exc:
            os.kill(pid, signal.SIGKILL)
            answer.readline()
            hung = subprocess.TimeoutExpired(["nvq", *argv], timeout or 0, stderr=exc.err)
            # where it hung: the call's threads, as faulthandler dumped them on SIGUSR2
            hung.add_note("its stderr, ending with its stack:\n" + _text(exc.err))
            raise hung from None
        status = answer.readline()
        assert status, f"the nvq zygote died during `nvq {' '.join(argv)}`"
    return os.waitstatus_to_exitcode(int(status)), _text(out), _text(err)


class Started:
    """An `nvq` call left running (`start_nvq`): its pid, and its exit code once it ends."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._answer = conn.makefile("rb")
        self.pid = int(self._answer.readline())

    def wait(self) -> int:
        status = self._answer.readline()
        self._answer.close()
        self._conn.close()
        assert status, "the nvq zygote died during the call"
        return os.waitstatus_to_exitcode(int(status))


def start_nvq(
    argv: list[str], *, env: dict[str, str], cwd: str | Path, user: User,
    stdio: tuple[int, int, int],
) -> Started:
    """`nvq ARGV` as `user`, on the descriptors `stdio` (a pty's, a pipe's), left running:
    for a call that lasts (`job forward`, `job shell`) as a user who cannot run this
    interpreter (tests.members)."""
    zygote = _zygote(env, everything=True)
    request = {"argv": argv, "env": {**env, "HOME": user.home}, "cwd": str(cwd),
               "user": {"uid": user.uid, "gid": user.gid, "groups": list(user.groups)}}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(zygote.path)
    conn.sendmsg([json.dumps(request).encode() + b"\n"],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", stdio))])
    return Started(conn)


def _usable_fd(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class CallTimedOut(TimeoutError):
    """The call ran past its deadline; `err`: what it wrote to stderr by then."""

    def __init__(self, err: bytes) -> None:
        super().__init__("the call timed out")
        self.err = err


def _communicate(
    in_w: int, out_r: int, err_r: int, input: str | None, deadline: float,
    on_timeout: Callable[[], None] | None = None,
) -> tuple[bytes, bytes]:
    """Write `input` and read both outputs to their end, as Popen.communicate does.
    Closes the three descriptors (each once: another thread's may reuse the number).
    At the deadline `on_timeout` (the call is asked for its stack) and three seconds
    more to read it, then CallTimedOut."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    pending = input.encode(locale.getpreferredencoding(False)) if input is not None else b""
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    if in_w >= 0 and pending:
        sel.register(in_w, selectors.EVENT_WRITE)
    elif in_w >= 0:
        os.close(in_w)
    try:
        while sel.get_map():
            ready = sel.select(max(0.0, deadline - time.monotonic()))
            if not ready and on_timeout is not None:
                on_timeout()
                on_timeout, deadline = None, time.monotonic() + 3.0
                continue
            if not ready:
                raise CallTimedOut(b"".join(chunks[err_r]))
            for key, _ in ready:
                fd = int(key.fd)
                if fd == in_w:
                    try:
                        pending = pending[os.write(fd, pending[:65536]) :]
                    except BrokenPipeError:
                        pending = b""
                    if not pending:
                        sel.unregister(fd)
                        os.close(fd)
                    continue
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    sel.unregister(fd)
                    os.close(fd)
    finally:
        for key in list(sel.get_map().values()):
            os.close(int(key.fd))
        sel.close()
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])
