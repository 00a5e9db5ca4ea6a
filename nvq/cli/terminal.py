"""The CLI's end of a terminal session (`job shell`, `job exec`): this terminal in raw
mode, keystrokes and resizes to the daemon, the remote pty's output to stdout.

While a shell waits for its cards the terminal stays as it is, so Ctrl-C interrupts
here (the connection closes and the daemon withdraws the job); once placed, every byte
goes to the remote side, Ctrl-C included, as in ssh."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import sys
import termios
import tty
from collections.abc import Callable
from typing import Any

from nvq import control as c
from nvq.client.errors import ClientError
from nvq.client.sync import HEADER
from nvq_runner.protocol import FrameError, FrameReader

BUF = 65536
EOT = b"\x04"  # what a terminal sends for end of input (stdin that is not a terminal)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(sock: socket.socket, msg: c.TermInput | c.TermSize) -> None:
    payload = c.encoder.encode(msg)
    # The daemon may have answered (a refusal) and closed already: its answer is still
    # there to read, so a send that finds the connection gone is not the end.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(HEADER.pack(len(payload)) + payload)


def window() -> tuple[int, int]:
    size = shutil.get_terminal_size((80, 24))
    with contextlib.suppress(OSError):
        size = os.get_terminal_size(sys.stdout.fileno())
    return size.lines, size.columns


def waiting_line(doc: dict[str, Any]) -> str:
    """`waiting for job 12: Resources — position 3; needs 1 GPU with 1 GiB free`."""
    if doc.get("state") == "starting":
        return f"job {doc['job']}: placed, starting"
    head = f"job {doc['job']} {doc.get('state')}"
    if doc.get("reason"):
        head += f": {doc['reason']}"
    if doc.get("position"):
        head += f" — position {doc['position']}"
    if doc.get("detail"):
        head += f"; {doc['detail']}"
    return head


class Status:
    """One status line on stderr, rewritten in place on a terminal."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.shown = False

    def show(self, text: str) -> None:
        if self.live:
            cols = shutil.get_terminal_size((80, 24)).columns
            sys.stderr.write("\r\x1b[K" + text[: max(10, cols - 1)])
            self.shown = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def done(self, text: str | None = None) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            self.shown = False
        if text:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


def run_session(
    sock: socket.socket, *, placed_at_once: bool = False, quiet: bool = False,
    on_progress: Callable[[dict[str, Any]], None] | None = None, pty: bool = True,
) -> c.Done:
    """Drive one session until the daemon's `Done` (returned). `placed_at_once`: the
    terminal is live from the start (`job exec`); otherwise from the `placed` progress.
    `pty`: the other end is a terminal (the end of piped input is a ^D to it);
    without, the end of input is an empty `TermInput` and stderr comes apart."""
    status = Status()
    stdin = sys.stdin.fileno()
    is_tty = os.isatty(stdin)
    saved = termios.tcgetattr(stdin) if is_tty else None
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    old_winch = signal.signal(signal.SIGWINCH, lambda *_: os.write(wake_w, b"w"))
    frames = FrameReader()
    live = False
    reading = True

    def go_live() -> None:
        nonlocal live
        live = True
        if saved is not None:
            tty.setraw(stdin, termios.TCSANOW)
        send(sock, c.TermSize(*window()))

    try:
        if placed_at_once:
            go_live()
        while True:
            watch: list[int] = [sock.fileno(), wake_r] + ([stdin] if live and reading else [])
            ready, _, _ = select.select(watch, [], [])
            if wake_r in ready:
                os.read(wake_r, 512)
                if live:
                    send(sock, c.TermSize(*window()))
            if stdin in ready:
                data = os.read(stdin, BUF)
                if data:
                    send(sock, c.TermInput(data))
                else:
                    reading = False  # piped input ran out: end of input for the shell
                    send(sock, c.TermInput(EOT if pty else b""))
            if sock.fileno() in ready:
                data = sock.recv(BUF)
                if not data:
                    raise ClientError("the daemon went away (it closed the connection)")
                try:
                    payloads = frames.feed(data)
                except FrameError as exc:
                    raise ClientError(f"the daemon's reply cannot be read: {exc}") from None
                for payload in payloads:
                    reply = c.reply_decoder.decode(payload)
                    if isinstance(reply, c.Chunk):
                        out = sys.stderr if reply.stderr else sys.stdout
                        _write_all(out.fileno(), reply.data)
                    elif isinstance(reply, c.Progress):
                        doc = reply.data if isinstance(reply.data, dict) else {}
                        if on_progress is not None:
                            on_progress(doc)
                        if "placed" in doc:
                            if not quiet:
                                status.done(f"job {doc['job']} placed on {doc['placed']}")
                            if not live:
                                go_live()
                        else:
                            status.show(waiting_line(doc))
                    elif isinstance(reply, c.Done):
                        return reply
    finally:
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        status.done()
        signal.signal(signal.SIGWINCH, old_winch)
        os.close(wake_r)
        os.close(wake_w)
        sock.close()
