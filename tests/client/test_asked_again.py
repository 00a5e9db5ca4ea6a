"""A request the daemon never read (killed as it reached the socket) is sent again; one
it read and then died on is not, since it may have acted. A Unix socket tells the two
apart: a peer that ends with data unread resets the connection (ECONNRESET), one that
read everything just closes it."""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import anyio
import pytest

from nvq import control as c
from nvq.client.asynchronous import AsyncClient
from nvq.client.sync import Client, WentAway
from nvq.home import Home

HEADER = struct.Struct(">I")


class DyingDaemon:
    """Listens on the daemon's socket. Each of the first `deaths` connections ends as
    soon as its request is there: unread (`read=False`) or read whole. The next gets
    `Done(data="pong")`."""

    def __init__(self, path: Path, deaths: int, *, read: bool) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        self.deaths, self.read = deaths, read
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self.connections += 1
                if self.connections <= self.deaths and not self.read:
                    conn.recv(1, socket.MSG_PEEK)  # the request is there, left unread
                    continue
                size = HEADER.unpack(_exactly(conn, HEADER.size))[0]
                _exactly(conn, size)
                if self.connections <= self.deaths:
                    continue
                payload = c.encoder.encode(c.Done(data="pong"))
                conn.sendall(HEADER.pack(len(payload)) + payload)

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join()


def _exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        assert part, "the client hung up"
        data += part
    return data


@pytest.fixture
def root(tmp_path: Path) -> Path:
    home = tmp_path / "nvq"
    home.mkdir(mode=0o700)
    return home


@pytest.mark.parametrize("request_", [c.Ping(), c.Cancel(ids=[1], array=False)])
def test_a_request_never_read_is_sent_again(root: Path, request_: c.Request) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=2, read=False)
    try:
        done = Client(root, autostart=False).request(request_)
    finally:
        daemon.close()
    assert done.data == "pong"
    assert daemon.connections == 3


def test_sending_again_stops_after_three(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=5, read=False)
    try:
        with pytest.raises(WentAway, match="reset"):
            Client(root, autostart=False).request(c.Wait(ids=[1], timeout=None))
    finally:
        daemon.close()
    assert daemon.connections == 3


@pytest.mark.parametrize("request_", [c.Wait(ids=[1], timeout=None), c.Cancel(ids=[1])])
def test_a_request_read_and_died_on_is_not_sent_again(root: Path, request_: c.Request) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=1, read=True)
    try:
        with pytest.raises(WentAway, match="closed the connection"):
            Client(root, autostart=False).request(request_)
    finally:
        daemon.close()
    assert daemon.connections == 1


def test_the_async_client_sends_a_request_never_read_again(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=2, read=False)
    try:
        done = anyio.run(AsyncClient(root, autostart=False).request, c.Cancel(ids=[1]))
    finally:
        daemon.close()
    assert done.data == "pong"
    assert daemon.connections == 3


def test_the_async_client_does_not_send_again_what_was_read(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=1, read=True)
    try:
        with pytest.raises(WentAway, match="closed the connection"):
            anyio.run(AsyncClient(root, autostart=False).request, c.Cancel(ids=[1]))
    finally:
        daemon.close()
    assert daemon.connections == 1
