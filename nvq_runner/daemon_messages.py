"""What the runner answers to each message of its daemon: one function per member of
`p.DaemonMsg`, registered once in `DAEMON_MESSAGES` (held complete by
tests/runner/test_daemon_messages.py). `Runner._dispatch` looks a frame's type up
there; a type without a row is refused loudly. Answers run on the loop and must not
block: one that waits on a disk or a thread starts a task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import protocol as p
from . import recovery, write_order
from .artifacts import manifest
from .conn import Conn
from .jobfiles import JobDir
from .tail import tail

if TYPE_CHECKING:
    from .server import Runner


def start(runner: Runner, conn: Conn, msg: p.Start) -> None:
    runner.queue.saw(msg.queue_id, msg.job_id)
    runner.jobs.start(msg)


def kill(runner: Runner, conn: Conn, msg: p.Kill) -> None:
    runner.jobs.kill(msg)


def ack(runner: Runner, conn: Conn, msg: p.Ack) -> None:
    runner.journal.ack(msg.seq)


def unfollow(runner: Runner, conn: Conn, msg: p.Unfollow) -> None:
    task = conn.tails.get(msg.req)
    if task is not None:
        task.cancel()


def sync(runner: Runner, conn: Conn, msg: p.Sync) -> None:
    runner.wake()


def blob_data(runner: Runner, conn: Conn, msg: p.BlobData) -> None:
    runner.fetcher.on_data(msg)


def relay_down(runner: Runner, conn: Conn, msg: p.RelayDown) -> None:
    runner.jobs.sockets.on_down(msg)


def heartbeat(runner: Runner, conn: Conn, msg: p.Heartbeat) -> None:
    runner.lease.renew(msg.lease)
    if msg.seq:
        conn.send(p.LeaseHeld(seq=msg.seq))


def images(runner: Runner, conn: Conn, msg: p.StageImage | p.ListImages) -> None:
    runner.images.on_message(msg)


def owner(runner: Runner, conn: Conn, msg: p.Owner) -> None:
    runner.set_owner(msg)


def artifacts_query(runner: Runner, conn: Conn, msg: p.ArtifactsQuery) -> None:
    asyncio.get_running_loop().create_task(_artifacts(runner, conn, msg))


def tree_query(runner: Runner, conn: Conn, msg: p.ArtifactsTreeQuery | p.ReadChunks) -> None:
    asyncio.get_running_loop().create_task(_artifacts_tree(runner, conn, msg))


def recover_query(runner: Runner, conn: Conn, msg: p.RecoverQuery) -> None:
    asyncio.get_running_loop().create_task(_recover(runner, conn, msg))


def tail_log(runner: Runner, conn: Conn, msg: p.Tail) -> None:
    d = runner.jobs.job_dir(msg.job_id)
    if not d.path.is_dir():
        conn.send(p.LogData(req=msg.req, eof=True, error=f"no job {msg.job_id} on this node"))
        return
    if msg.stream == "both":
        _tail_both(runner, conn, msg, d)
        return
    path = d.attempt_log(msg.stream, msg.attempt)
    if path is None:
        error = f"no log of attempt {msg.attempt} of job {msg.job_id} on this node"
        conn.send(p.LogData(req=msg.req, eof=True, error=error))
        return
    run = runner.jobs.running.get(msg.job_id)
    if run is not None and msg.attempt not in (None, run.rec.attempt):
        run = None  # an earlier attempt's log: it grows no more
    ended = run.ended if (run is not None and msg.follow) else None
    task = asyncio.create_task(
        tail(path, msg.req, msg.lines, ended, conn.send_log, msg.max_bytes, msg.offset))
    conn.tails[msg.req] = task
    task.add_done_callback(lambda t: conn.tails.pop(msg.req, None))


def _tail_both(runner: Runner, conn: Conn, msg: p.Tail, d: JobDir) -> None:
    run = runner.jobs.running.get(msg.job_id)
    attempt = msg.attempt if msg.attempt is not None else (run.rec.attempt if run else None)
    run = run if run is not None and attempt == run.rec.attempt else None
    # The running attempt's logs are the live ones: no kept ones to look for.
    logs = {s: d.log(s) if run else d.attempt_log(s, msg.attempt) for s in write_order.STREAMS}
    if attempt is None:
        rec = d.read_record()
        attempt = rec.attempt if rec is not None else None
    if attempt is None or logs["stdout"] is None or logs["stderr"] is None:
        error = f"no log of attempt {msg.attempt} of job {msg.job_id} on this node"
        conn.send(p.LogData(req=msg.req, eof=True, error=error))
        return
    ended = run.ended if (run is not None and msg.follow) else None
    drained = runner.jobs.order.drained(d.path, attempt)
    offsets = {"stdout": msg.offset or 0, "stderr": msg.err_offset or 0}
    task = asyncio.create_task(write_order.merged_tail(
        {s: path for s, path in logs.items() if path is not None},
        write_order.order_path(d.path, attempt), msg.req, offsets, ended, drained,
        conn.send_log))
    conn.tails[msg.req] = task
    task.add_done_callback(lambda t: conn.tails.pop(msg.req, None))


async def _artifacts(runner: Runner, conn: Conn, msg: p.ArtifactsQuery) -> None:
    root = runner.jobs.job_dir(msg.job_id).artifacts
    try:
        files = await asyncio.to_thread(manifest, root)
        conn.send(p.ArtifactsManifest(req=msg.req, job_id=msg.job_id, files=files,
                                    root=str(root.absolute())))
    except OSError as exc:
        conn.send(p.ArtifactsManifest(req=msg.req, job_id=msg.job_id, error=str(exc)))


async def _recover(runner: Runner, conn: Conn, msg: p.RecoverQuery) -> None:
    running = [(r.rec.job_id, r.rec.attempt) for r in runner.jobs.running.values()]
    found = await asyncio.to_thread(
        recovery.records, runner.jobs.root, msg.job_ids, msg.queue_id, running)
    conn.send(p.Recovered(req=msg.req, records=found))


async def _artifacts_tree(
    runner: Runner, conn: Conn, msg: p.ArtifactsTreeQuery | p.ReadChunks
) -> None:
    directory = runner.jobs.job_dir(msg.job_id).artifacts
    reply = runner.job_artifacts.read(msg, directory) if isinstance(msg, p.ReadChunks) \
        else runner.job_artifacts.describe(msg, directory)
    conn.send(await reply)


Answer = Callable[["Runner", Conn, Any], None]
DAEMON_MESSAGES: dict[type[p.DaemonMsg], Answer] = {
    p.Start: start,
    p.Kill: kill,
    p.Ack: ack,
    p.Tail: tail_log,
    p.Unfollow: unfollow,
    p.Sync: sync,
    p.ArtifactsQuery: artifacts_query,
    p.BlobData: blob_data,
    p.ArtifactsTreeQuery: tree_query,
    p.ReadChunks: tree_query,
    p.RelayDown: relay_down,
    p.Heartbeat: heartbeat,
    p.RecoverQuery: recover_query,
    p.StageImage: images,
    p.ListImages: images,
    p.Owner: owner,
}
