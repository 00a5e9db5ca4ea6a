"""`nvq logs` (streamed to the CLI chunk by chunk) and the tail `job show --logs`
includes: from the queue host's copy of the attempt's output where there is one
(`nvq.daemon.output.output_copies`: it works while the node is down or gone, and holds both
streams in the order written), else the job's node reads its log files and sends
them over the link."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio

from nvq.daemon.core.errors import BadRequest, RequestError
from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.core.state import State
from nvq.daemon.output.output_copy import (
    Renderer,
    Shown,
    copy_paths,
    last_lines,
    read_state,
    records,
    whole_records_end,
)
from nvq.domain import attempts
from nvq.model import JobRecord, JobState
from nvq_runner import protocol as p

_requests = itertools.count(1)  # names each log stream on its node's link


async def open_logs(
    state: State,
    job_id: int,
    *,
    lines: int,
    follow: bool,
    stream: str,
    attempt: int | None = None,
    marks: bool = False,
) -> AsyncIterator[bytes]:
    """The job's log (of one attempt; None: the latest), chunk by chunk; raises
    `RequestError` before the first chunk when there is nothing to read, or after it
    when the node goes away."""
    job = await state.get_job(job_id)
    if attempt is None and not follow and job.node is None and job.attempt:
        attempt = job.attempt  # waiting to run again (preempted, moved): its last attempt
    # An attempt that has ended: one before the current, or the current one of a job
    # back in line (it has no node until its next attempt starts).
    if attempt is not None and (attempt != job.attempt or job.node is None):
        if stream != "setup" and _has_copy(state, job.id, attempt):
            return _from_copy(
                state, job.id, attempt, stream, lines, follow=False, marks=marks, ended=True
            )
        if stream == "both":
            await _attempt_node(state, job, attempt)  # says so when there is none
            return _both_from_node(state, job, lines, attempt)
        return await _open_earlier(state, job, attempt, lines=lines, stream=stream)
    while follow and (job.node is None or job.started_at is None) and not job.state.finished:
        # `logs -f` on a job still waiting for a card follows it from its start (not
        # from its dispatch: the runner may still be preparing the job's world).
        changed = state.changed
        await changed.wait()
        job = await state.get_job(job_id)
    if job.node is None:
        raise RequestError(f"job {job_id} has not started yet: it has no logs")
    if stream != "setup" and job.attempt and _has_copy(state, job.id, job.attempt):
        ended = job.state.finished or job.state is JobState.PENDING
        return _from_copy(
            state, job.id, job.attempt, stream, lines, follow=follow, marks=marks, ended=ended
        )
    if stream == "both":
        if follow:
            stream = "stdout"
        else:
            return _both_from_node(state, job, lines, None)
    return _tail(state, job.node, job_id, lines=lines, follow=follow, stream=stream, attempt=None)


def _has_copy(state: State, job_id: int, attempt: int) -> bool:
    """Whether the queue host's copy answers: one is being made, holds output, or
    is complete and empty (a job that printed nothing, whose node may be gone)."""
    copier = state.copies
    if copier is not None and copier.copying(job_id, attempt):
        return True
    out_path, state_path = copy_paths(state.home, job_id, attempt)
    if out_path.exists():
        return True
    copied = read_state(state_path)
    return copied is not None and copied.complete


async def _both_from_node(
    state: State, job: JobRecord, lines: int, attempt: int | None
) -> AsyncIterator[bytes]:
    """No copy here (a job from before copies were kept): stdout, then stderr."""
    node = job.node if attempt is None else await _attempt_node(state, job, attempt)
    assert node is not None
    for stream in ("stdout", "stderr"):
        async for data in _tail(
            state, node, job.id, lines=lines, follow=False, stream=stream, attempt=attempt
        ):
            yield data


def _read_from(path: Any, start: int) -> tuple[bytes, int]:
    """What the copy holds past `start` (whole records only) and its inode."""
    try:
        with open(path, "rb") as f:
            ino = os.fstat(f.fileno()).st_ino
            f.seek(start)
            data = f.read()
    except OSError:
        return b"", 0
    return data[: whole_records_end(data)], ino


async def _from_copy(
    state: State, job_id: int, attempt: int, stream: str, lines: int, *, follow: bool,
    marks: bool, ended: bool,
) -> AsyncIterator[bytes]:
    """The queue host's copy: its last `lines`, then (with follow) each piece as it
    arrives, until the attempt's output is all here."""
    path = copy_paths(state.home, job_id, attempt)[0]
    copier = state.copies
    shown: Shown = stream if stream in ("stdout", "stderr", "both") else "stdout"  # type: ignore[assignment]
    renderer = Renderer(shown, marks)
    if copier is not None and ended and not follow:
        await copier.settled(job_id, attempt)
    grown = copier.grown(job_id, attempt) if copier is not None else None
    data, ino = await anyio.to_thread.run_sync(_read_from, path, 0)
    pos = len(data)
    text = last_lines(renderer.render(list(records(data))), lines, state.config.queue.max_log_tail)
    if text:
        yield text
    while follow and copier is not None and grown is not None:
        still = copier.copying(job_id, attempt)
        if still:
            await grown.wait()
            grown = copier.grown(job_id, attempt)
        data, now = await anyio.to_thread.run_sync(_read_from, path, pos)
        if not ino:
            ino = now  # the copy's first piece arrived
        elif now and now != ino:  # the copy had its middle cut: carry on from its end
            whole, ino = await anyio.to_thread.run_sync(_read_from, path, 0)
            pos, data = len(whole), b""
            yield b"[nvq: output cut here]\n"
        pos += len(data)
        text = renderer.render(list(records(data)))
        if text:
            yield text
        if not still:
            return


async def _open_earlier(
    state: State, job: JobRecord, attempt: int, *, lines: int, stream: str
) -> AsyncIterator[bytes]:
    """An earlier attempt's log, from the node it ran on (it grows no more)."""
    node = await _attempt_node(state, job, attempt)
    return _tail(state, node, job.id, lines=lines, follow=False, stream=stream, attempt=attempt)


async def _attempt_node(state: State, job: JobRecord, attempt: int) -> str:
    ran = {a.attempt: a for a in attempts.derive(await state.store.events(job_id=job.id))}
    past = ran.get(attempt)
    if past is None or past.node is None:
        known = ", ".join(str(n) for n, a in sorted(ran.items()) if a.node) or "none"
        raise BadRequest(f"job {job.id} has no attempt {attempt} (attempts: {known})")
    return past.node


def _tail(
    state: State,
    node_name: str,
    job_id: int,
    *,
    lines: int,
    follow: bool,
    stream: str,
    attempt: int | None,
) -> AsyncIterator[bytes]:
    node = state.nodes.get(node_name)
    if node is None or node.send is None or node.state != "up":
        raise RequestError(f"node {node_name} of job {job_id} is not reachable now")
    req = next(_requests)
    send, receive = anyio.create_memory_object_stream[p.LogData](1000)

    def deliver(msg: p.LogData) -> None:
        try:
            send.send_nowait(msg)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    node.log_streams[req] = deliver
    node.post(
        p.Tail(
            req=req,
            job_id=job_id,
            stream=stream,  # type: ignore[arg-type]
            lines=lines,
            follow=follow,
            attempt=attempt,
            max_bytes=state.config.queue.max_log_tail,
        )
    )
    return _drain(node, req, receive)


async def _drain(node: NodeRuntime, req: int, receive: Any) -> AsyncIterator[bytes]:
    try:
        async with receive:
            async for msg in receive:
                if msg.data:
                    yield msg.data
                if msg.eof:
                    if msg.error:
                        raise RequestError(msg.error)
                    return
    finally:
        if node.log_streams.pop(req, None) is not None:
            node.post(p.Unfollow(req))


async def tail_text(state: State, job: JobRecord, lines: int, stream: str = "stdout") -> str | None:
    """The last `lines` of the job's log, or None when it cannot be read now."""
    try:
        logs = await open_logs(state, job.id, lines=lines, follow=False, stream=stream)
        chunks = [c async for c in logs]
    except RequestError:
        return None
    return b"".join(chunks).decode(errors="replace")
