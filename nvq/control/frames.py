"""The frames on `$NVQ_HOME/daemon.sock`: a request, then `Chunk`s (streaming commands,
e.g. `job logs -f`) and one `Done`. Errors are a `Done` with `error` set: one line the
CLI prints as it is."""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.control.requests import Request
from nvq.control.terminal import Progress
from nvq.model import Event


class Chunk(msgspec.Struct, tag="chunk", frozen=True):
    data: bytes
    stderr: bool = False  # a `job exec` without a terminal: the command's stderr


class Done(msgspec.Struct, tag="done", frozen=True):
    data: Any = None
    error: str | None = None
    exit_code: int = 0  # what the CLI should exit with (wait: 0, 1 or 2)


Reply = Chunk | Done | Progress

# A subscription's chunk: the events of one commit (or a page of the backlog).
event_batch_decoder = msgspec.msgpack.Decoder(list[Event])

request_decoder = msgspec.msgpack.Decoder(Request)
reply_decoder = msgspec.msgpack.Decoder(Reply)
encoder = msgspec.msgpack.Encoder()
