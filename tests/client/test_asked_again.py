"""A read whose daemon went away before a word of its answer (killed as the question
reached it) is asked again; a request that changes something is not, since the dead
daemon may have carried it out."""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest

from nvq import control as c
from nvq.client.sync import Client, WentAway
from nvq.home import Home

HEADER = struct.Struct(">I")


class DyingDaemon:
    """Listens on the daemon's socket: resets the first `deaths` connections as soon as
    their request arrives, answers the next with `Done(data="pong")`."""

    def __init__(self, path: Path, deaths: int) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        self.deaths = deaths
        self.asked = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                size = HEADER.unpack(_exactly(conn, HEADER.size))[0]
                _exactly(conn, size)
                self.asked += 1
                if self.asked <= self.deaths:
                    # Reset, as the kernel does for a killed process's socket.
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
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


def test_a_read_is_asked_again_after_a_reset(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=2)
    try:
        done = Client(root, autostart=False).request(c.Ping())
    finally:
        daemon.close()
    assert done.data == "pong"
    assert daemon.asked == 3


def test_a_read_gives_up_after_three_resets(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=5)
    try:
        with pytest.raises(WentAway, match="went away"):
            Client(root, autostart=False).request(c.Wait(ids=[1], timeout=None))
    finally:
        daemon.close()
    assert daemon.asked == 3


def test_a_change_is_not_asked_again(root: Path) -> None:
    daemon = DyingDaemon(Home(root).socket, deaths=1)
    try:
        with pytest.raises(WentAway, match="went away"):
            Client(root, autostart=False).request(c.Cancel(ids=[1], array=False))
    finally:
        daemon.close()
    assert daemon.asked == 1
