"""What every session over the control socket (`job shell`, `job exec`, `job forward`)
shares: the client's frames after its request, replies as frames, and the running job
a session attaches to."""

from __future__ import annotations

import struct
import time
from collections.abc import Awaitable, Callable

import anyio
import msgspec
from anyio.abc import SocketStream

from nvq import control as c
from nvq.daemon.core.errors import RequestError
from nvq.daemon.handlers.context import Context
from nvq.model import JobRecord, JobState
from nvq_runner.protocol import FrameReader
from nvq_runner.ptyhost import WINSIZE, frame

_HEADER = struct.Struct(">I")

Send = Callable[[c.Reply], Awaitable[None]]
# The client's frames that came in the same read as its request, and the reader
# holding any part of the next one.
Early = tuple[FrameReader, list[bytes]]


def reply_frame(msg: c.Reply) -> bytes:
    payload = c.encoder.encode(msg)
    return _HEADER.pack(len(payload)) + payload


def to_pty(msg: c.TermInput | c.TermSize) -> bytes:
    """A client frame as ptyhost.py reads it."""
    if isinstance(msg, c.TermInput):
        return frame(b"d", msg.data)
    return frame(b"w", WINSIZE.pack(max(1, min(msg.rows, 65535)), max(1, min(msg.cols, 65535))))


class ClientFrames:
    """The client's frames after its request, and whether it has gone away."""

    def __init__(self, stream: SocketStream, early: Early) -> None:
        self.stream = stream
        self.frames, self.early = early
        self.gone = anyio.Event()
        self.last_input = 0.0  # monotonic time of the last keystroke
        self.send, self.inbox = anyio.create_memory_object_stream[c.TermInput | c.TermSize](1000)

    async def read(self) -> None:
        frames = self.frames
        try:
            for payload in self.early:
                await self.send.send(c.term_frame_decoder.decode(payload))
            while True:
                data = await self.stream.receive()
                for payload in frames.feed(data):
                    msg = c.term_frame_decoder.decode(payload)
                    if isinstance(msg, c.TermInput):
                        self.last_input = time.monotonic()
                    await self.send.send(msg)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError, msgspec.DecodeError):
            pass
        finally:
            self.send.close()
            self.gone.set()


async def latest_job(ctx: Context, job_id: int) -> JobRecord:
    state = ctx.state
    job = state.jobs.get(job_id)
    return job if job is not None else await state.get_job(job_id)


async def running_job(ctx: Context, job_id: int) -> JobRecord:
    job = await latest_job(ctx, job_id)
    if job.state is not JobState.RUNNING or job.node is None or job.pid is None:
        raise RequestError(f"job {job_id} is not running (it is {job.state})")
    node = ctx.state.nodes.get(job.node)
    if node is None or node.send is None:
        raise RequestError(f"job {job_id}'s node {job.node} is not connected right now")
    return job
