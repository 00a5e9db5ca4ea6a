"""`attach`: splice stdin/stdout to the runner's socket. The daemon runs this over an
SSH exec channel, once per connection, so it imports nothing beyond the stdlib."""

from __future__ import annotations

import os
import select
import socket
from pathlib import Path

from .launcher import connect, ensure_running

BUF = 256 * 1024


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def splice(sock: socket.socket, fd_in: int = 0, fd_out: int = 1) -> None:
    """Copy fd_in → sock and sock → fd_out until either side closes."""
    poller = select.poll()
    poller.register(fd_in, select.POLLIN)
    poller.register(sock.fileno(), select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == fd_in:
                data = os.read(fd_in, BUF)
                if not data:
                    return
                sock.sendall(data)
            else:
                data = sock.recv(BUF)
                if not data:
                    return
                _write_all(fd_out, data)


def splice_until_closed(sock: socket.socket) -> None:
    """`splice`, then close `sock`; the other side going away is the normal end."""
    try:
        splice(sock)
    except (BrokenPipeError, ConnectionError):
        pass
    finally:
        sock.close()


def attach(home: Path) -> int:
    ensure_running(home)
    splice_until_closed(connect(home))
    return 0
