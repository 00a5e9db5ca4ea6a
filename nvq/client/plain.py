"""A request over the plain wire (nvq.control.plain) with nothing but the standard
library: what the CLI's commonest reads use, so that a call costs little more than
the interpreter's start. It never starts a daemon; `NotAnswering` tells the caller
to take the typed client, which does, and which says why it cannot."""

from __future__ import annotations

import json
import struct

# the C module under `socket`: socket.py's enums cost a CLI call more than its exchange
from _socket import AF_UNIX, SOCK_STREAM
from _socket import socket as unix_socket

from nvq.client.errors import WENT_AWAY, ClientError
from nvq.errors import Internal

TYPE_CHECKING = False  # typing itself costs the CLI call this module serves
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024  # nvq_runner.protocol.MAX_FRAME


class NotAnswering(Internal):
    """Nothing listens on the socket, or what listens does not speak the plain wire:
    the caller asks again through the typed client."""


def ask(socket_path: str | Path, request: dict[str, Any], want: str = "data") -> tuple[Any, int]:
    """`Done.data` and `Done.exit_code` of one request (`{"type": …, …}`, as msgspec
    writes the typed one). A refusal raises ClientError with the daemon's words."""
    payload = json.dumps({"request": request, "want": want}).encode()
    sock = unix_socket(AF_UNIX, SOCK_STREAM)
    try:
        try:
            sock.connect(str(socket_path))
        except OSError as exc:
            raise NotAnswering(str(exc)) from None
        try:
            sock.sendall(HEADER.pack(len(payload)) + payload)
            first = sock.recv(HEADER.size)
        except OSError as exc:
            # Reset unanswered: the daemon was killed as this read reached it. The
            # typed path asks again (starting a daemon if none runs).
            raise NotAnswering(str(exc)) from None
        if not first:
            # Closed unanswered: a daemon from before the plain wire (the CLI was
            # upgraded under a running one) drops a request it cannot decode. The typed
            # path asks again; a read asked twice changes nothing.
            raise NotAnswering("the daemon closed the connection without an answer")
        try:
            done = json.loads(_read_frame(sock, first))
        except OSError as exc:
            raise ClientError(WENT_AWAY.format(exc.strerror or exc)) from None
    finally:
        sock.close()
    if done.get("error") is not None:
        raise ClientError(done["error"], done.get("exit_code") or 1)
    return done.get("data"), done.get("exit_code", 0)



def open_stream(socket_path: str | Path, request: dict[str, Any]) -> Iterator[bytes]:
    """A streamed answer (`job logs`): its chunks as they come. NotAnswering before
    anything was read (the caller asks through the typed client; a daemon from before
    plain streams drops the request unanswered); then a refusal, or the daemon going
    away, raises ClientError from the iterator."""
    payload = json.dumps({"request": request, "want": "stream"}).encode()
    sock = unix_socket(AF_UNIX, SOCK_STREAM)
    try:
        sock.connect(str(socket_path))
        sock.sendall(HEADER.pack(len(payload)) + payload)
        first = sock.recv(HEADER.size)
    except OSError as exc:
        sock.close()
        raise NotAnswering(str(exc)) from None
    if not first:
        sock.close()
        raise NotAnswering("the daemon closed the connection without an answer")
    return _chunks(sock, first)


def _chunks(sock: unix_socket, first: bytes) -> Iterator[bytes]:
    from binascii import a2b_base64

    try:
        while True:
            try:
                frame = json.loads(_read_frame(sock, first))
            except OSError as exc:
                raise ClientError(WENT_AWAY.format(exc.strerror or exc)) from None
            first = b""
            if frame.get("type") == "chunk":
                yield a2b_base64(frame["data"])
                continue
            if frame.get("error") is not None:
                raise ClientError(frame["error"], frame.get("exit_code") or 1)
            return
    finally:
        sock.close()

CONTINUED = 1 << 31  # nvq_runner.protocol.CONTINUED: the answer goes on in the next frame


def _read_frame(sock: unix_socket, start: bytes) -> bytes:
    """One answer, joined from the frames it spans."""
    parts: list[bytes] = []
    while True:
        word = HEADER.unpack(start + _read_exactly(sock, HEADER.size - len(start)))[0]
        size = word & ~CONTINUED
        if size > MAX_FRAME:
            raise ClientError(
                f"the daemon's reply cannot be read: frame of {size} bytes is over the "
                f"{MAX_FRAME} limit"
            )
        parts.append(_read_exactly(sock, size))
        if not word & CONTINUED:
            return b"".join(parts)
        start = b""


def _read_exactly(sock: unix_socket, n: int) -> bytes:
    parts: list[bytes] = []
    while n:
        data = sock.recv(min(n, 1 << 20))
        if not data:
            raise ClientError(WENT_AWAY.format("it closed the connection"))
        parts.append(data)
        n -= len(data)
    return b"".join(parts)
