"""The CLI's side of the control socket: connect (starting the daemon when none runs),
send one request, read the replies. Blocking sockets on purpose: a CLI call is one
short exchange and should not pay for an event loop's start-up."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from nvq import control as c
from nvq.detach import spawn_detached
from nvq.home import Home, default_root
from nvq_runner.protocol import FrameReader

_HEADER = struct.Struct(">I")
START_TIMEOUT = 20.0


class CliError(Exception):
    """Shown to the user as one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def nvq_home() -> Path:
    return default_root()


def _connect(sock_path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(sock_path))
    except OSError:
        s.close()
        raise
    return s


def start_daemon(home: Path) -> None:
    """Start `nvq daemon` detached from this terminal and wait until it answers."""
    from nvq.config import ConfigError, load_config

    try:
        load_config(home)
    except ConfigError as exc:
        raise CliError(str(exc), 2) from None
    home.mkdir(parents=True, exist_ok=True)
    log_path = Home(home).log
    proc = spawn_detached("nvq.daemon.main", home, log_path)
    deadline = time.monotonic() + START_TIMEOUT
    sock_path = Home(home).socket
    while time.monotonic() < deadline:
        try:
            _connect(sock_path).close()
            return
        except OSError:
            pass
        code = proc.poll()
        # Exit 3 means another CLI won the race and its daemon is starting: keep waiting.
        if code is not None and code != 3:
            raise CliError(f"the daemon failed to start: {_last_line(log_path)}")
        time.sleep(0.02)
    raise CliError(f"the daemon did not start within {START_TIMEOUT:g}s; see {log_path}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"


def connect(home: Path, *, autostart: bool = True) -> socket.socket:
    sock_path = Home(home).socket
    try:
        return _connect(sock_path)
    except (FileNotFoundError, ConnectionRefusedError):
        if not autostart:
            raise CliError("no daemon is running", 1) from None
    start_daemon(home)
    try:
        return _connect(sock_path)
    except OSError as exc:
        raise CliError(f"cannot reach the daemon at {sock_path}: {exc}") from None


def exchange(
    request: c.Request, *, home: Path | None = None, autostart: bool = True
) -> Iterator[c.Reply]:
    """Send `request`, yield every reply frame up to and including the `Done`."""
    sock = connect(home or nvq_home(), autostart=autostart)
    try:
        payload = c.encoder.encode(request)
        sock.sendall(_HEADER.pack(len(payload)) + payload)
        frames = FrameReader()
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise CliError("the daemon closed the connection without answering")
            for frame in frames.feed(data):
                reply = c.reply_decoder.decode(frame)
                yield reply
                if isinstance(reply, c.Done):
                    return
    finally:
        sock.close()


def call(request: c.Request, **kwargs: object) -> c.Done:
    """A request with a single answer; raises CliError when the daemon refuses it."""
    for reply in exchange(request, **kwargs):  # type: ignore[arg-type]
        if isinstance(reply, c.Done):
            if reply.error is not None:
                raise CliError(reply.error, reply.exit_code or 1)
            return reply
    raise CliError("no answer from the daemon")
