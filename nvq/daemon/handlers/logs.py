"""`nvq logs` (streamed to the CLI chunk by chunk) and the tail `job show --logs`
includes: the job's node reads its log files and sends them over the link."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio

from nvq.daemon.errors import RequestError
from nvq.daemon.nodes import NodeRuntime
from nvq.daemon.state import State
from nvq.domain import attempts
from nvq.model import Job
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
) -> AsyncIterator[bytes]:
    """The job's log (of one attempt; None: the latest), chunk by chunk; raises
    `RequestError` before the first chunk when there is nothing to read, or after it
    when the node goes away."""
    job = await state.get_job(job_id)
    if attempt is not None and attempt != job.attempt:
        return await _open_earlier(state, job, attempt, lines=lines, stream=stream)
    while follow and (job.node is None or job.started_at is None) and not job.state.finished:
        # `logs -f` on a job still waiting for a card follows it from its start (not
        # from its dispatch: the runner may still be preparing the job's world).
        changed = state.changed
        await changed.wait()
        job = await state.get_job(job_id)
    if job.node is None:
        raise RequestError(f"job {job_id} has not started yet: it has no logs")
    return _tail(state, job.node, job_id, lines=lines, follow=follow, stream=stream, attempt=None)


async def _open_earlier(
    state: State, job: Job, attempt: int, *, lines: int, stream: str
) -> AsyncIterator[bytes]:
    """An earlier attempt's log, from the node it ran on (it grows no more)."""
    ran = {a.attempt: a for a in attempts.derive(await state.store.events(job_id=job.id))}
    past = ran.get(attempt)
    if past is None or past.node is None:
        known = ", ".join(str(n) for n, a in sorted(ran.items()) if a.node) or "none"
        raise RequestError(f"job {job.id} has no attempt {attempt} (attempts: {known})")
    return _tail(
        state, past.node, job.id, lines=lines, follow=False, stream=stream, attempt=attempt
    )


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


async def tail_text(state: State, job: Job, lines: int, stream: str = "stdout") -> str | None:
    """The last `lines` of the job's log, or None when it cannot be read now."""
    try:
        logs = await open_logs(state, job.id, lines=lines, follow=False, stream=stream)
        chunks = [c async for c in logs]
    except RequestError:
        return None
    return b"".join(chunks).decode(errors="replace")
