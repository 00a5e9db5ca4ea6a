"""Serves the CLI on `$NVQ_HOME/daemon.sock`: one request per connection, answered
with `Chunk`s (streams) and a final `Done`."""

from __future__ import annotations

import logging
import pwd
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import SocketAttribute, SocketStream

from nvq import control as c
from nvq.daemon.context import Context
from nvq.daemon.errors import RequestError, map_exceptions
from nvq.daemon.handlers import HANDLERS
from nvq.daemon.handlers.events import FellBehind, subscribe
from nvq.daemon.handlers.logs import open_logs
from nvq_runner.protocol import FrameError, FrameReader

log = logging.getLogger("nvq.control")
_HEADER = struct.Struct(">I")


def _frame(msg: c.Reply) -> bytes:
    payload = c.encoder.encode(msg)
    return _HEADER.pack(len(payload)) + payload


def peer_user(stream: SocketStream) -> str:
    """The OS user on the other end of the socket (SO_PEERCRED): who is asking."""
    sock = stream.extra(SocketAttribute.raw_socket)
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


async def _read_request(stream: SocketStream) -> c.Request:
    frames = FrameReader()
    while True:
        data = await stream.receive()
        payloads = frames.feed(data)
        if payloads:
            return c.request_decoder.decode(payloads[0])


async def serve_control(
    ctx: Context, path: Path, *, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    await anyio.Path(path).unlink(missing_ok=True)
    listener = await anyio.create_unix_listener(path)
    await anyio.Path(path).chmod(0o600)
    task_status.started()
    async with listener:
        await listener.serve(lambda stream: _handle(ctx, stream))


async def _handle(ctx: Context, stream: SocketStream) -> None:
    async with stream:
        try:
            request = await _read_request(stream)
        except (anyio.EndOfStream, anyio.BrokenResourceError, FrameError, msgspec.DecodeError):
            return
        user = peer_user(stream)
        try:
            if isinstance(request, c.Logs):
                await _stream_logs(ctx, stream, request)
                return
            if isinstance(request, c.Subscribe):
                await _send_chunks(stream, await subscribe(ctx.state, request))
                return
            data, code = await _answer(ctx, request, user)
            reply = c.Done(data=data, exit_code=code)
        except RequestError as exc:
            reply = c.Done(error=str(exc), exit_code=exc.exit_code)
        except Exception as exc:
            log.exception("request %r failed", request)
            reply = c.Done(error=f"internal error: {exc}", exit_code=1)
        try:
            await stream.send(_frame(reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        if isinstance(request, c.StopDaemon):
            ctx.state.stop_requested.set()


async def _stream_logs(ctx: Context, stream: SocketStream, req: c.Logs) -> None:
    """Chunks until the log ends; stops early when the CLI goes away (Ctrl-C)."""
    try:
        chunks = await open_logs(
            ctx.state,
            req.id,
            lines=req.lines,
            follow=req.follow,
            stream=req.stream,
            attempt=req.attempt,
        )
    except RequestError as exc:
        await stream.send(_frame(c.Done(error=str(exc), exit_code=1)))
        return
    await _send_chunks(stream, chunks)


async def _send_chunks(stream: SocketStream, chunks: AsyncIterator[bytes]) -> None:
    """Each payload as a `Chunk`, then `Done`; stops early when the client goes away."""
    async with anyio.create_task_group() as tg:

        async def watch_client() -> None:
            try:
                while await stream.receive():
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass
            tg.cancel_scope.cancel()

        tg.start_soon(watch_client)
        try:
            async for data in chunks:
                await stream.send(_frame(c.Chunk(data)))
            await stream.send(_frame(c.Done()))
        except FellBehind as exc:
            resume = {"fell_behind": exc.last_id}
            await stream.send(_frame(c.Done(data=resume, error=str(exc), exit_code=1)))
        except RequestError as exc:
            await stream.send(_frame(c.Done(error=str(exc), exit_code=1)))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
            tg.cancel_scope.cancel()


async def _answer(ctx: Context, request: c.Request, user: str) -> tuple[Any, int]:
    handler = HANDLERS.get(type(request))
    if handler is None:
        raise RequestError(f"unknown request {type(request).__name__}")
    with map_exceptions():
        return await handler(ctx, request, user)
