"""Serves the CLI on `$NVQ_HOME/daemon.sock`: one request per connection, answered
with `Chunk`s (streams) and a final `Done`."""

from __future__ import annotations

import logging
import pwd
import socket
import struct
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import SocketAttribute, SocketStream

from nvq import control as c
from nvq.backup import BackupError
from nvq.daemon import lane_ops, machine_requests, policy
from nvq.daemon.core import Core, RequestError
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
    core: Core, path: Path, *, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    path.unlink(missing_ok=True)
    listener = await anyio.create_unix_listener(path)
    path.chmod(0o600)
    task_status.started()
    async with listener:
        await listener.serve(lambda stream: _handle(core, stream))


async def _handle(core: Core, stream: SocketStream) -> None:
    async with stream:
        try:
            request = await _read_request(stream)
        except (anyio.EndOfStream, anyio.BrokenResourceError, FrameError, msgspec.DecodeError):
            return
        user = peer_user(stream)
        try:
            if isinstance(request, c.Logs):
                await _stream_logs(core, stream, request)
                return
            data, code = await _answer(core, request, user)
            reply = c.Done(data=data, exit_code=code)
        except RequestError as exc:
            reply = c.Done(error=str(exc), exit_code=1)
        except Exception as exc:
            log.exception("request %r failed", request)
            reply = c.Done(error=f"internal error: {exc}", exit_code=1)
        try:
            await stream.send(_frame(reply))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        if isinstance(request, c.StopDaemon):
            core.stop_requested.set()


async def _stream_logs(core: Core, stream: SocketStream, req: c.Logs) -> None:
    """Chunks until the log ends; stops early when the CLI goes away (Ctrl-C)."""
    try:
        chunks = await core.logs(req.id, lines=req.lines, follow=req.follow, stream=req.stream)
    except RequestError as exc:
        await stream.send(_frame(c.Done(error=str(exc), exit_code=1)))
        return
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
        except RequestError as exc:
            await stream.send(_frame(c.Done(error=str(exc), exit_code=1)))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
            tg.cancel_scope.cancel()


async def _answer(core: Core, request: c.Request, user: str) -> tuple[Any, int]:
    match request:
        case c.Ping():
            return {"pid": core.status_pid(), "version": core.version()}, 0
        case c.Submit(spec=spec):
            return await core.submit(spec, user), 0
        case c.ListJobs(array=int() as array_id):
            return await policy.list_array(core, array_id), 0
        case c.ListJobs(active=active, states=states, limit=limit):
            return await core.list_jobs(active=active, states=states, limit=limit), 0
        case c.ShowJob(id=job_id, logs=n):
            return await core.show(job_id, logs=n), 0
        case c.Cancel(ids=ids, array=array):
            return await core.cancel(await policy.cancel_ids(core, ids, array), by=user), 0
        case c.Release(ids=ids):
            return await core.release(ids, by=user), 0
        case c.Note(id=job_id, text=text, append=append, clear=clear):
            return await core.note(job_id, text, append, clear), 0
        case c.Result(id=job_id, set_json=set_json):
            return await core.result(job_id, set_json), 0
        case c.Wait(ids=ids, timeout=timeout):
            jobs, code = await core.wait(ids, timeout)
            return jobs, code
        case c.Status():
            return await core.status(), 0
        case c.Nodes(include_ignored=include_ignored):
            return core.node_views(include_ignored=include_ignored), 0
        case c.NodeFlag(node=name, flag=flag, value=value):
            return await core.set_node_flag(name, flag, value), 0
        case c.Events(since=since, limit=limit, job_id=job_id):
            return await core.store.events(since=since, limit=limit, job_id=job_id), 0
        case c.Bootstrap(node=name, force=force):
            return await core.bootstrap(name, force), 0
        case c.Alerts(include_acked=include_acked):
            shown = await core.ops.alerts(include_acked)
            # Non-zero while anything is unacknowledged: a cheap health check.
            return shown, 1 if any(a.acked_at is None for a in shown) else 0
        case c.Ack(ids=ids):
            try:
                return await core.ops.ack(ids, by=user), 0
            except LookupError as exc:
                raise RequestError(str(exc)) from None
        case c.Backup(path=path):
            try:
                return await core.ops.backup(path), 0
            except BackupError as exc:
                raise RequestError(str(exc)) from None
        case c.StopDaemon():
            return {"stopping": True}, 0
        case c.JobArtifacts() | c.BusyMode() | c.BusyAssign():
            return await machine_requests.answer(core, request, user), 0
        case c.Requeue(ids=ids):
            return await policy.requeue(core, ids, user, time.time()), 0
        case c.Purge(before=before):
            return await policy.purge(core, before, user), 0
        case c.Edit(id=job_id, drop_after=drop, add_after=add):
            return await policy.edit(core, job_id, drop, add, user), 0
        case c.Priority(ids=ids, change=change, up=up, array=array):
            return await policy.priority(core, ids, array=array, change=change, up=up, user=user), 0
        case c.Pause(ids=ids, array=array):
            return await policy.pause(core, ids, array=array, user=user, now=time.time()), 0
        case c.Resume(ids=ids, array=array):
            return await policy.resume(core, ids, array=array, user=user), 0
        case c.Lanes():
            return await lane_ops.lanes_view(core), 0
        case c.Lane(lane=lane, action=None):
            return await lane_ops.lane_view(core, lane), 0
        case c.Lane(lane=lane, action=str() as action, ids=ids, to=to, before=before, at=at):
            doc = await lane_ops.lane_action(
                core, lane, action, ids, to=to, before=before, at=at, user=user
            )
            return doc, 0
    raise RequestError(f"unknown request {type(request).__name__}")
