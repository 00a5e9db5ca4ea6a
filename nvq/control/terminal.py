"""Streams that carry a terminal or a connection (`job shell`, `job exec`,
`job forward`): the request opens the stream, then both sides keep sending frames on
the same connection until the daemon's `Done`.

CLI → daemon, after the request: `TermInput` (keystrokes, or a forwarded
connection's bytes), `TermSize` (the terminal was resized). Closing the connection
ends the session (a `job shell` still waiting is withdrawn).
Daemon → CLI: `Progress` while a shell waits for its cards and once placed, `Chunk`s
of terminal output, then `Done` with the job as it ended and the exit code to end with.
"""

from __future__ import annotations

from typing import Any

import msgspec

from nvq.model import JobSpec


class Shell(msgspec.Struct, tag="shell", frozen=True):
    """Queue `spec` as an interactive job and, once placed, relay its terminal."""

    spec: JobSpec
    rows: int = 24
    cols: int = 80
    idle_release: bool = True  # ended when idle ([queue] interactive_idle)


class Exec(msgspec.Struct, tag="exec", frozen=True):
    """A shell or `command` inside running job `id`'s allocation (the job untouched)."""

    id: int
    command: str = ""
    rows: int = 24
    cols: int = 80
    tty: bool = True


class Forward(msgspec.Struct, tag="forward", frozen=True):
    """One connection to `port` on running job `id`'s node (its bytes as TermInput
    and Chunks). `port` 0: the job's own $NVQ_PORT. `check`: only say where it would
    go (the job runs, the port is known) and end."""

    id: int
    port: int = 0
    check: bool = False


class TermInput(msgspec.Struct, tag="in", frozen=True):
    data: bytes


class TermSize(msgspec.Struct, tag="size", frozen=True):
    rows: int
    cols: int


class Progress(msgspec.Struct, tag="progress", frozen=True):
    """Where a session stands: {"job", "state", "reason", "detail", "position"} while
    it waits; {"job", "placed": "node:gpus", "port"} once it runs."""

    data: Any


TermFrame = TermInput | TermSize
term_frame_decoder = msgspec.msgpack.Decoder(TermFrame)
