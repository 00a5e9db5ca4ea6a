"""The plain wire (a JSON request on the daemon's socket, nvq.control.plain): what the
CLI's commonest reads use without msgspec. It answers one `Done` as JSON, refuses
streams, hides secrets like the typed path, and tells the caller when nothing listens."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from nvq.client.errors import ClientError
from nvq.client.plain import NotAnswering, ask, open_stream
from nvq.home import Home
from tests.cluster import Nvq


def test_answers_refusals_and_streams(nvq: Nvq) -> None:
    sock = Home(nvq.home).socket
    job = nvq.submit("--env", "MY_SECRET=hush", "--", "true")["id"]
    nvq.wait(job)
    data, code = ask(sock, {"type": "show", "id": job, "logs": 0})
    assert code == 0 and data["id"] == job and data["state"] == "completed"
    assert data["env"] == {"MY_SECRET": "***"}
    text, _ = ask(sock, {"type": "show", "id": job, "logs": 0}, "json")
    assert text + "\n" == nvq.run("job", "show", str(job), "--json").out
    with pytest.raises(ClientError) as no_job:
        ask(sock, {"type": "show", "id": 999, "logs": 0})
    assert (str(no_job.value), no_job.value.exit_code) == ("no job with id 999", 2)
    with pytest.raises(ClientError) as stream:
        ask(sock, {"type": "logs", "id": job})
    assert (str(stream.value), stream.value.exit_code) == (
        "streams are not answered on the plain wire", 2)


def test_job_logs_stream_when_asked_to(nvq: Nvq) -> None:
    """`want="stream"`: a log's chunks as frames of their own, then its end; a refusal
    comes from the iterator; any other stream is still refused."""
    sock = Home(nvq.home).socket
    # one stream: two streams written in the same instant may arrive either way round
    # (nvq.daemon.output.output_copy), and their order is not what this test is about
    job = nvq.submit("--", "sh", "-c", "echo one; echo two")["id"]
    nvq.wait(job)
    request = {"type": "logs", "id": job, "lines": -1, "stream": "both"}
    assert b"".join(open_stream(sock, request)) == b"one\ntwo\n"
    with pytest.raises(ClientError) as no_job:
        list(open_stream(sock, {**request, "id": 999}))
    assert (str(no_job.value), no_job.value.exit_code) == ("no job with id 999", 2)
    with pytest.raises(ClientError) as events:
        list(open_stream(sock, {"type": "subscribe"}))
    assert str(events.value) == "streams are not answered on the plain wire"


def test_a_malformed_request_is_dropped_and_the_daemon_serves_on(nvq: Nvq) -> None:
    nvq.ok("queue", "status")  # the daemon runs
    path = Home(nvq.home).socket
    for bad in (b"{not json", b'{"request": {"type": "no-such"}}', b'{"request": 1}'):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(path))
        s.sendall(struct.pack(">I", len(bad)) + bad)
        assert s.recv(100) == b""  # closed without an answer
        s.close()
    assert json.loads(nvq.run("queue", "status", "--json").out)["counts"] is not None


def test_nothing_listening_is_not_answering(tmp_path: Path) -> None:
    with pytest.raises(NotAnswering):
        ask(tmp_path / "daemon.sock", {"type": "status"})


def test_a_daemon_without_the_plain_wire_is_not_answering(tmp_path: Path) -> None:
    """A daemon from before the plain wire drops the JSON request unanswered (its
    msgpack decoder refuses it): the CLI then takes the typed path."""
    path = tmp_path / "daemon.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def drop_one() -> None:
        conn, _ = server.accept()
        conn.recv(1 << 16)
        conn.close()

    thread = threading.Thread(target=drop_one)
    thread.start()
    try:
        with pytest.raises(NotAnswering):
            ask(path, {"type": "status"})
    finally:
        thread.join()
        server.close()


def test_a_stop_request_on_the_plain_wire_stops_the_daemon(nvq: Nvq) -> None:
    nvq.ok("queue", "status")
    pid = int((nvq.home / "daemon.pid").read_text())
    ask(Home(nvq.home).socket, {"type": "stop"})
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()
