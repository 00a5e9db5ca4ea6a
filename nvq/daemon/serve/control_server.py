"""Serves the CLI on `$NVQ_HOME/daemon.sock`: one request per connection, answered
with `Chunk`s (streams) and a final `Done`."""

from __future__ import annotations

import contextlib
import errno
import grp
import logging
import os
import pwd
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import ByteStream, SocketAttribute, SocketListener, SocketStream

from nvq import control as c
from nvq.control.plain import (
    PlainRequest,
    json_document,
    plain_encoder,
    plain_request_decoder,
)
from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.errors import BadRequest, RequestError, map_exceptions
from nvq.daemon.handlers import HANDLERS, permission
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.logs import open_logs
from nvq.daemon.handlers.subscribe import FellBehind, subscribe
from nvq.daemon.handlers.visibility import Viewer, event_job_ids, shown_to
from nvq.daemon.serve.reply_guard import CHECKING, holds_record
from nvq.domain import permissions
from nvq.domain.permissions import Rule
from nvq.home import queue_owner
from nvq.values import MAX_INT, MIN_INT
from nvq.world.secrets import hide_secrets, shown_json
from nvq_runner.protocol import PART, FrameError, FrameReader, split_frames

log = logging.getLogger("nvq.control")
# accept() failing for want of descriptors or memory: a lull, not the end of serving.
_NO_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_RETRY = 0.1
REPLY_PART = PART  # the most one frame of an answer holds (tests make it small)


def _frame(msg: c.Reply, plain: bool = False) -> bytes:
    """`msg` framed; an answer longer than a frame (every job of a million-job queue)
    goes in consecutive frames the client joins (nvq_runner.protocol.split_frames)."""
    payload = plain_encoder.encode(msg) if plain else c.encoder.encode(msg)
    return split_frames(payload, REPLY_PART)


def peer_user(stream: SocketStream) -> str:
    """The OS user on the other end of the socket (SO_PEERCRED): who is asking."""
    sock = stream.extra(SocketAttribute.raw_socket)
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


async def _read_request(
    stream: ByteStream, frames: FrameReader, early: list[bytes]
) -> tuple[c.Request, PlainRequest | None]:
    """The request, and its plain-wire wrapper when it came as JSON (nvq.control.plain).
    Frames that came with it (a session's first keystrokes) are left in `early`, and
    a part of one in `frames`."""
    while True:
        data = await stream.receive()
        payloads = frames.feed(data)
        if payloads:
            early += payloads[1:]
            if payloads[0][:1] == b"{":
                plain = plain_request_decoder.decode(payloads[0])
                return plain.request, plain
            return c.request_decoder.decode(payloads[0]), None


async def open_control_socket(path: Path, members_group: str | None) -> SocketListener:
    """Bind the socket 0600 from its first moment (the umask is narrowed around bind:
    a chmod after it would leave a window where anyone could connect), then open it
    to `members_group` (group first, then mode) when the queue is shared."""
    await anyio.Path(path).unlink(missing_ok=True)
    old = os.umask(0o177)
    try:
        listener = await anyio.create_unix_listener(path)
    finally:
        os.umask(old)
    if members_group is not None:
        os.chown(path, -1, grp.getgrnam(members_group).gr_gid)
        await anyio.Path(path).chmod(0o660)
    return listener


async def serve_control(
    ctx: Context,
    path: Path,
    members_group: str | None = None,
    *,
    task_status: Any = anyio.TASK_STATUS_IGNORED,
) -> None:
    listener = await open_control_socket(path, members_group)
    task_status.started()
    async with listener, anyio.create_task_group() as tg:
        short = False  # in a spell of running out of descriptors (logged once)
        while True:
            try:
                stream = await listener.accept()
            except anyio.BrokenResourceError as exc:
                if not _out_of_descriptors(exc):
                    raise
                if not short:
                    log.warning(
                        "cannot accept connections: %s; refusing new ones until "
                        "descriptors are free",
                        exc.__cause__,
                    )
                short = True
                # The connection waits in the backlog; try again in a moment.
                await anyio.sleep(ACCEPT_RETRY)
                continue
            if short:
                log.info("accepting connections again")
                short = False
            tg.start_soon(_handle, ctx, stream)


def _out_of_descriptors(exc: BaseException) -> bool:
    cause = exc.__cause__
    return isinstance(cause, OSError) and cause.errno in _NO_DESCRIPTORS


async def _handle(ctx: Context, stream: SocketStream) -> None:
    async with stream:
        frames, early = FrameReader(), list[bytes]()
        try:
            request, plain = await _read_request(stream, frames, early)
        except (anyio.EndOfStream, anyio.BrokenResourceError, FrameError, msgspec.DecodeError):
            return
        user = peer_user(stream)
        if isinstance(request, c.Shell | c.Exec | c.Forward) and plain is None:
            await _serve_session(ctx, stream, request, user, (frames, early))
            return
        if isinstance(request, c.ReceiveSnapshot) and plain is None:
            from nvq.daemon.artifacts.snapshot_intake import receive_snapshot

            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await receive_snapshot(ctx.state, ctx.snapshots, stream, _frame(c.Done()), user)
            return
        reply = await _reply(ctx, stream, request, plain, user)
        if reply is None:
            return  # a stream, answered as it went
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(_frame(reply, plain=plain is not None))
        # The one effect applied after its handler (the reply must leave first): only
        # for a stop that was allowed and answered, never for a refused one.
        if isinstance(request, c.StopDaemon) and reply.error is None:
            ctx.state.stop_requested.set()


async def _reply(
    ctx: Context, stream: ByteStream, request: c.Request, plain: PlainRequest | None, user: str
) -> c.Done | None:
    """The request's `Done`, or None for a stream (its chunks and `Done` are sent as they
    come). On the plain wire the answer is hidden of secrets, as data or as the text
    `--json` prints, and streams are refused."""
    try:
        if isinstance(request, c.Shell | c.Exec | c.Forward | c.ReceiveSnapshot):
            raise BadRequest("streams are not answered on the plain wire")
        if isinstance(request, c.Logs | c.Subscribe):
            # `job logs` may stream on the plain wire when asked to (want="stream"):
            # each chunk a JSON frame, its bytes in base64 (nvq.client.plain.stream)
            logs_plainly = isinstance(request, c.Logs) and plain is not None and (
                plain.want == "stream")
            if plain is not None and not logs_plainly:
                raise BadRequest("streams are not answered on the plain wire")
            if isinstance(request, c.Logs):
                await check_permission(ctx, request, user)
                await _stream_logs(ctx, stream, request, plain=logs_plainly)
            else:
                events = await subscribe(ctx.state, request, viewer(ctx, user))
                await _send_chunks(stream, events)
            return None
        data, code = await _answer(ctx, request, user)
        if CHECKING and holds_record(data):
            raise TypeError(f"the answer to {type(request).__name__} holds a JobRecord")
        data = await shown_to_user(ctx, data, user)
        if plain is not None:
            data = shown_json(json_document(request, data)) if plain.want == "json" else (
                hide_secrets(data))
        return c.Done(data=data, exit_code=code)
    except RequestError as exc:
        return c.Done(error=str(exc), exit_code=exc.exit_code)
    except Exception as exc:
        log.exception("request %r failed", request)
        return c.Done(error=f"internal error: {exc}", exit_code=1)


async def serve_relayed(ctx: Context, stream: ByteStream, user: str) -> None:
    """One request a job made on its `$NVQ_SOCKET` (nvq.daemon.sessions.relay), answered as
    `user`, its owner, exactly as on the control socket. Terminal sessions are not
    relayed: a job has no terminal to give them."""
    frames, early = FrameReader(), list[bytes]()
    try:
        request, plain = await _read_request(stream, frames, early)
    except (anyio.EndOfStream, anyio.BrokenResourceError, FrameError, msgspec.DecodeError):
        return
    if isinstance(request, c.Shell | c.Exec | c.Forward):
        await refuse_relayed(stream, "a job cannot open a terminal session from inside itself")
        return
    if isinstance(request, c.ReceiveSnapshot):
        await refuse_relayed(stream, "a job submits without a snapshot of its own: "
                                     "pass --no-snapshot or --workdir")
        return
    reply = await _reply(ctx, stream, request, plain, user)
    if reply is not None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(_frame(reply, plain=plain is not None))
        if isinstance(request, c.StopDaemon) and reply.error is None:
            ctx.state.stop_requested.set()


async def refuse_relayed(stream: ByteStream, error: str) -> None:
    """Read the request (its encoding decides the answer's) and refuse it."""
    frames, early = FrameReader(), list[bytes]()
    try:
        _request, plain = await _read_request(stream, frames, early)
    except (anyio.EndOfStream, anyio.BrokenResourceError, FrameError, msgspec.DecodeError):
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(_frame(c.Done(error=error, exit_code=1), plain=plain is not None))


async def _serve_session(
    ctx: Context, stream: SocketStream, request: c.Shell | c.Exec | c.Forward, user: str,
    early: tuple[FrameReader, list[bytes]],
) -> None:
    """A terminal or connection relayed both ways until it ends (nvq.daemon.sessions.sessions).
    `early`: the client's frames that came with the request."""
    from nvq.daemon.sessions import sessions

    try:
        if isinstance(request, c.Shell):
            await check_permission(ctx, c.Submit(request.spec), user)
            await sessions.serve_shell(ctx, stream, request, user, early)
        else:
            await check_permission(ctx, request, user)
            await sessions.serve_other(ctx, stream, request, early)
    except RequestError as exc:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(_frame(c.Done(error=str(exc), exit_code=exc.exit_code)))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
        pass  # the client went away
    except Exception as exc:
        log.exception("session %r failed", request)
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(_frame(c.Done(error=f"internal error: {exc}", exit_code=1)))


async def _stream_logs(ctx: Context, stream: ByteStream, req: c.Logs, *, plain: bool) -> None:
    """Chunks until the log ends; stops early when the CLI goes away (Ctrl-C), also
    while `-f` still waits for the job to start (the wait is inside the watch)."""

    async def chunks() -> AsyncIterator[bytes]:
        opened = await open_logs(
            ctx.state,
            req.id,
            lines=req.lines,
            follow=req.follow,
            stream=req.stream,
            attempt=req.attempt,
            marks=req.marks,
        )
        try:
            async for data in opened:
                yield data
        finally:
            await opened.aclose()  # type: ignore[attr-defined]

    await _send_chunks(stream, chunks(), plain=plain)


async def _send_chunks(
    stream: ByteStream, chunks: AsyncIterator[bytes], *, plain: bool = False
) -> None:
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
                await stream.send(_frame(c.Chunk(data), plain=plain))
            await stream.send(_frame(c.Done(), plain=plain))
        except FellBehind as exc:
            resume = {"fell_behind": exc.last_id}
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(_frame(c.Done(data=resume, error=str(exc), exit_code=1)))
        except RequestError as exc:
            done = c.Done(error=str(exc), exit_code=exc.exit_code)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(_frame(done, plain=plain))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the client went away
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
            tg.cancel_scope.cancel()


def _too_large(value: Any) -> bool:
    """Any integer in a request that SQLite could not store (an id or a priority of
    2^63): refused here rather than failing deep in the store."""
    if isinstance(value, int) and not isinstance(value, bool):
        return not MIN_INT <= value <= MAX_INT
    if isinstance(value, dict):
        return any(_too_large(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_too_large(v) for v in value)
    return False


def viewer(ctx: Context, user: str) -> Viewer:
    return Viewer(user, queue_admins(ctx.state), ctx.state.config.queue.members_read)


async def shown_to_user(ctx: Context, data: Any, user: str) -> Any:
    """`data` as `user` may see it (nvq.daemon.handlers.visibility)."""
    who = viewer(ctx, user)
    if user in who.admins:
        return data
    ids = event_job_ids(data)
    owners = {j.id: j.user for j in await ctx.state.store.jobs(ids=sorted(ids))} if ids else {}
    return shown_to(data, who, owners)


async def check_permission(ctx: Context, request: c.Request, user: str) -> None:
    """The one gate: `request`'s row of the permission table, for `user`."""
    allowed = permission(request)
    if isinstance(request, (c.Submit, c.SubmitDry, c.SubmitFromJob)):
        with map_exceptions():
            permissions.check_submit(user, queue_owner(), can_switch_user=os.geteuid() == 0)
    if allowed.rule is Rule.ANYONE:
        return
    admins = queue_admins(ctx.state)
    with map_exceptions():
        if allowed.rule is Rule.ADMIN:
            permissions.check_admin(user, admins, allowed.action)
        elif allowed.rule is Rule.PRIVATE and user not in admins:
            jobs = [await ctx.state.get_job(i) for i in await _named_ids(ctx, request)]
            read = ctx.state.config.queue.members_read
            permissions.check_private(jobs, user, admins, read, allowed.action)
        elif user not in admins:
            jobs = [await ctx.state.get_job(i) for i in await _named_ids(ctx, request)]
            permissions.check(jobs, user, admins, allowed.action)


async def _named_ids(ctx: Context, request: c.Request) -> list[int]:
    """The jobs a job-level request would change (every member, for an array)."""
    single = getattr(request, "id", None)
    ids: list[int] = [single] if isinstance(single, int) else list(getattr(request, "ids", []))
    if not getattr(request, "array", False):
        return ids
    members: list[int] = []
    for array_id in ids:
        members += [j.id for j in await ctx.state.store.array_members(array_id)]
    return members


async def _answer(ctx: Context, request: c.Request, user: str) -> tuple[Any, int]:
    """The handler's reply and the exit code it sets (0 unless it is `Coded`)."""
    handler = HANDLERS.get(type(request))
    if handler is None:
        raise BadRequest(f"unknown request {type(request).__name__}")
    if _too_large(msgspec.to_builtins(request)):
        raise BadRequest(f"a number is too large: the largest nvq takes is {MAX_INT}")
    await check_permission(ctx, request, user)
    with map_exceptions():
        reply = await handler(ctx, request, user)
    if isinstance(reply, c.Coded):
        return reply.reply, reply.exit_code
    return reply, 0
