"""The daemon is the authority on a submission: a spec sent straight to its socket,
as a program other than the CLI might, is checked like one from the CLI."""

from __future__ import annotations

import socket
import struct

import msgspec
import pytest

from tests.cluster import Nvq


def _raw_submit(nvq: Nvq, spec: dict[str, object]) -> dict[str, object]:
    """Send a submit frame the CLI would never build, as another program might."""
    nvq.ok("queue", "status")  # the daemon is up
    body = {"type": "submit", "spec": {"command": "true", **spec}}
    payload = msgspec.msgpack.encode(body)
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(nvq.home / "daemon.sock"))
        s.sendall(struct.pack(">I", len(payload)) + payload)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return msgspec.msgpack.decode(data[4:])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "spec",
    [
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"env": {"A\0B": "1"}},
        {"env": {"A=B": "1"}},
        {"env": {"CUDA_VISIBLE_DEVICES": "1"}},
        {"gpus": -1},
    ],
)
def test_a_bad_spec_sent_straight_to_the_socket_is_refused(nvq: Nvq, spec: dict[str, object]) -> None:
    reply = _raw_submit(nvq, spec)
    assert reply.get("error"), reply
    assert nvq.run("job", "ls", "--json").json()["jobs"] == []
