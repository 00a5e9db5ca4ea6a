"""Interactive sessions on the control socket (nvq.control.terminal): `job shell`
queues a job and, once it runs, relays its terminal; the CLI's frames go to the job's
pty on its node and the pty's output comes back as `Chunk`s.

The bytes cross the node's existing connection: a new exec channel on the SSH
connection the runner link already holds (`nvq_runner pty-attach`, spliced to the
job's ptyhost.py), or a local process for the queue host's own node. The job itself is
an ordinary job of the runner's: it is placed, counted, cancelled and ended as any
other, and its exit is the shell's.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.abc import SocketStream

from nvq import control as c
from nvq.daemon.core.apply import queue_admins
from nvq.daemon.core.errors import RequestError, map_exceptions
from nvq.daemon.handlers import policy, submit
from nvq.daemon.handlers.context import Context
from nvq.daemon.handlers.why import with_reason
from nvq.daemon.machines.node_pipes import attach_terminal, job_dir, open_on_node
from nvq.daemon.sessions.forwards import serve_forward
from nvq.daemon.sessions.idle_watch import watch_idle
from nvq.daemon.sessions.session_io import (
    ClientFrames,
    Early,
    Send,
    latest_job,
    reply_frame,
    running_job,
    to_pty,
)
from nvq.domain import request
from nvq.domain.permissions import check_admin
from nvq.model import FINISHED_STATES, JobRecord, JobState
from nvq_runner.ptyhost import Frames

log = logging.getLogger("nvq.sessions")
ENDING_WAIT = 60.0  # after the terminal closed, for the runner's word that the job ended

def waiting_doc(ctx: Context, job: JobRecord) -> dict[str, Any]:
    """What a waiting shell shows: its state, the reason, and its place in the line."""
    shown = with_reason(ctx, job)
    ahead = sum(
        1 for j in ctx.state.jobs.values()
        if j.state is JobState.PENDING and j.id != job.id
        and (-j.spec.priority, j.rank, j.id) < (-job.spec.priority, job.rank, job.id)
    )
    return {
        "job": job.id,
        "state": str(job.state),
        "reason": shown.reason,
        "detail": getattr(shown, "reason_detail", None),
        "position": ahead + 1,
    }


async def wait_placed(ctx: Context, job_id: int, send: Send, client: ClientFrames) -> JobRecord | None:
    """Until the job runs with its process started (the job), ends first (None after
    the Done is sent), or the client leaves (None: the job is withdrawn)."""
    last: dict[str, Any] | None = None
    while True:
        changed = ctx.state.changed
        job = await latest_job(ctx, job_id)
        if job.state in FINISHED_STATES:
            await send(c.Done(data=request.view_of(job), error=f"job {job.id} {job.state}"
                              + (f": {job.reason}" if job.reason else ""), exit_code=1))
            return None
        if job.state is JobState.RUNNING and job.pid is not None:
            return job
        doc = waiting_doc(ctx, job) if job.state is not JobState.RUNNING else {
            "job": job.id, "state": "starting", "reason": None, "detail": None, "position": 0}
        if doc != last:
            await send(c.Progress(doc))
            last = doc
        with anyio.move_on_after(5):  # reasons also change with node samples
            async with anyio.create_task_group() as tg:
                async def either(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()
                tg.start_soon(either, changed)
                tg.start_soon(either, client.gone)
        if client.gone.is_set():
            await withdraw(ctx, job_id)
            return None


async def withdraw(ctx: Context, job_id: int) -> None:
    """The person left before (or while) the session ran: the job ends."""
    job = await latest_job(ctx, job_id)
    if job.state in FINISHED_STATES:
        return
    with contextlib.suppress(RequestError):
        await policy.cancel(ctx, c.Cancel(ids=[job_id]), job.user)


async def relay(
    pty: anyio.abc.ByteStream, client: ClientFrames, send: Send, *, streams: bool = False
) -> None:
    """Client frames → pty, pty output → client, until the pty side ends (the shell
    exited, or was hung up because the client left). `streams`: the other side is
    `pty-exec --no-tty`, whose output comes framed (`o` stdout, `e` stderr)."""
    frames = Frames()
    async with anyio.create_task_group() as tg:

        async def upstream() -> None:
            async with client.inbox:
                async for msg in client.inbox:
                    await pty.send(to_pty(msg))
            # The client left: closing our end hangs the shell up (ptyhost.py).
            with contextlib.suppress(Exception):
                await pty.send_eof()

        tg.start_soon(upstream)
        try:
            while True:
                data = await pty.receive()
                chunks = (
                    [c.Chunk(payload, stderr=kind == b"e") for kind, payload in frames.feed(data)]
                    if streams else [c.Chunk(data)]
                )
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    for chunk in chunks:
                        await send(chunk)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        tg.cancel_scope.cancel()


async def wait_ended(ctx: Context, job_id: int) -> JobRecord:
    with anyio.move_on_after(ENDING_WAIT):
        while True:
            changed = ctx.state.changed
            job = await latest_job(ctx, job_id)
            if job.state in FINISHED_STATES:
                return job
            await changed.wait()
    return await latest_job(ctx, job_id)


def final_done(job: JobRecord) -> c.Done:
    """The shell's exit code when it ended by itself; 1 (with the reason) otherwise."""
    if job.state in (JobState.COMPLETED, JobState.FAILED) and job.exit_code is not None:
        return c.Done(data=request.view_of(job), exit_code=job.exit_code)
    said = f"job {job.id} {job.state}" + (f": {job.reason}" if job.reason else "")
    return c.Done(data=request.view_of(job), error=said, exit_code=1)


async def serve_shell(
    ctx: Context, stream: SocketStream, req: c.Shell, user: str, early: Early
) -> None:
    spec = msgspec.structs.replace(req.spec, interactive=True, name=req.spec.name or "interactive")
    lock = anyio.Lock()

    async def send(msg: c.Reply) -> None:
        async with lock:
            await stream.send(reply_frame(msg))

    try:
        if not req.idle_release and ctx.state.config.queue.interactive_keep == "admins":
            with map_exceptions():
                check_admin(user, queue_admins(ctx.state), "keep a session past its idle "
                            'release (--no-idle-release; [queue] interactive_keep = "admins")')
        job = await submit.submit(ctx, c.Submit(spec), user)
    except RequestError as exc:
        await send(c.Done(error=str(exc), exit_code=exc.exit_code))
        return
    client = ClientFrames(stream, early)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.read)
        try:
            await _session(ctx, job.id, send, client, req)
        finally:
            tg.cancel_scope.cancel()


async def _session(ctx: Context, job_id: int, send: Send, client: ClientFrames,
                   req: c.Shell) -> None:
    try:
        job = await wait_placed(ctx, job_id, send, client)
        if job is None:
            return
        assert job.node is not None
        node = ctx.state.nodes[job.node]
        pty = await attach_terminal(ctx.state, node, job.id, job.nonce)
        await send(c.Progress({"job": job.id, "placed": _where(job), "port": job.port}))
        await pty.send(to_pty(c.TermSize(req.rows, req.cols)))
        try:
            async with anyio.create_task_group() as tg:
                if req.idle_release:
                    tg.start_soon(watch_idle, ctx, job, lambda: client.last_input,
                                  lambda data: send(c.Chunk(data)))
                await relay(pty, client, send)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await pty.aclose()
        if client.gone.is_set():
            await withdraw(ctx, job_id)
            return
        await send(final_done(await wait_ended(ctx, job_id)))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await withdraw(ctx, job_id)
    except RequestError as exc:
        await withdraw(ctx, job_id)
        with contextlib.suppress(Exception):
            await send(c.Done(error=str(exc), exit_code=1))


async def serve_other(
    ctx: Context, stream: SocketStream, req: c.Exec | c.Forward, early: Early
) -> None:
    if isinstance(req, c.Forward):
        await serve_forward(ctx, stream, req, early)
        return
    await serve_exec(ctx, stream, req, early)


async def serve_exec(ctx: Context, stream: SocketStream, req: c.Exec, early: Early) -> None:
    """A shell or command beside the job, on its node, with its environment; the job
    is not touched, and the session's end is only the session's."""
    lock = anyio.Lock()

    async def send(msg: c.Reply) -> None:
        async with lock:
            await stream.send(reply_frame(msg))

    job = await running_job(ctx, req.id)
    assert job.node is not None and job.pid is not None
    node = ctx.state.nodes[job.node]
    args = ["pty-exec", "--pid", str(job.pid), "--dir", job_dir(ctx.state, node, job.id, job.nonce),
            "--rows", str(req.rows), "--cols", str(req.cols)]
    if req.command:
        args += ["--cmd", req.command]
    if not req.tty:
        args.append("--no-tty")
    pipe = await open_on_node(ctx.state, node, args)
    client = ClientFrames(stream, early)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read)
            await send(c.Progress({"job": job.id, "placed": _where(job), "port": job.port}))
            await relay(pipe, client, send, streams=not req.tty)
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await pipe.aclose()
    code = getattr(pipe, "exit_status", None)
    if code is None:
        code = getattr(pipe, "returncode", None)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await send(c.Done(data={"job": job.id}, exit_code=code if isinstance(code, int) else 1))


def _where(job: JobRecord) -> str:
    return f"{job.node}:{','.join(map(str, job.gpus))}" if job.gpus else f"{job.node}:cpu"
