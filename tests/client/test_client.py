"""`nvq.Client` and `nvq.AsyncClient` against a real daemon: what a Python program sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

import nvq as nvq_pkg
from nvq import control as c
from nvq.model import Event, Job, JobState, NodeView
from tests.cluster import Nvq


def _client(nvq: Nvq) -> nvq_pkg.Client:
    nvq.ok("queue", "status")  # the CLI starts the daemon with the test's environment
    return nvq_pkg.Client(nvq.home, autostart=False)


def test_submit_wait_show_logs_events(nvq: Nvq) -> None:
    with _client(nvq) as q:
        job = q.submit(["sh", "-c", "echo hello from $0", "train"], vram="1GiB", name="hello")
        assert (job.name, job.vram_mb, job.state) == ("hello", 1024, JobState.PENDING)
        done = q.wait(job.id, timeout=60)
        assert done.exit_code == 0
        assert [(j.id, j.state) for j in done.jobs] == [(job.id, JobState.COMPLETED)]
        detail = q.show(job.id)
        assert detail.command == "sh -c 'echo hello from $0' train"
        assert [a.outcome for a in detail.attempts] == ["completed"]
        assert "job_completed" in [e.kind for e in detail.events]
        assert b"".join(q.logs(job.id)) == b"hello from train\n"
        kinds = [e.kind for e in q.events(job=job.id)]
        assert kinds[0] == "job_submitted" and kinds[-1] == "job_completed"
        assert [j.id for j in q.jobs()] == [job.id]


def test_failed_job_and_cancel(nvq: Nvq) -> None:
    with _client(nvq) as q:
        bad = q.submit("exit 3", gpus=0)
        assert q.wait([bad.id], timeout=60).exit_code == 1
        assert q.show(bad.id).exit_code == 3
        slow = q.submit("sleep 60", gpus=0, timeout="5m")
        assert slow.timeout == 300.0
        (cancelled,) = q.cancel(slow.id)
        assert cancelled.id == slow.id
        assert q.wait(slow.id, timeout=60).jobs[0].state is JobState.CANCELLED


def test_typed_replies_encode_to_what_the_daemon_sent(nvq: Nvq) -> None:
    """`--json` prints the typed replies: each must be the daemon's document, key for
    key and in the same order."""
    with _client(nvq) as q:
        job = q.submit("echo x; exit 1", gpus=0)  # a failure: an alert, an attempt
        q.wait(job.id, timeout=60)
        running = q.submit("sleep 30", gpus=1, vram="1GiB")
        nvq.wait_for(running.id, lambda j: j["state"] == "running")
        cases: list[tuple[c.Request, Any]] = [
            (c.ShowJob(id=job.id), c.JobDetail),
            (c.ShowJob(id=job.id, logs=5), c.JobDetail),
            (c.ListJobs(), list[Job]),
            (c.JobWindow(), c.JobPage),
            (c.Status(), c.QueueStatus),
            (c.Nodes(procs=True), list[NodeView]),
            (c.Events(), list[Event]),
            (c.Lanes(), list[c.LaneStatus]),
            (c.Lane(lane="local:0"), c.LaneDetail),
            (c.Alerts(include_acked=True), list[c.Alert]),
            (c.Ping(), c.Pong),
        ]
        for request, kind in cases:
            raw = q.request(request).data
            typed = msgspec.convert(raw, kind)
            assert msgspec.json.encode(typed) == msgspec.json.encode(raw), request
        q.cancel(running.id)


def test_missing_job_is_a_client_error(nvq: Nvq) -> None:
    with _client(nvq) as q, pytest.raises(nvq_pkg.ClientError) as caught:
        q.show(999)
    assert str(caught.value) == "no job with id 999"
    assert caught.value.exit_code == 2  # bad input, as in every command


def test_dead_socket_is_daemon_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "nvq"
    home.mkdir()
    (home / "daemon.sock").touch()  # a socket file left behind, nobody listening
    with pytest.raises(nvq_pkg.DaemonUnavailable, match="no daemon is running"):
        nvq_pkg.Client(home, autostart=False).status()
    with pytest.raises(nvq_pkg.DaemonUnavailable, match="no daemon is running"):
        anyio.run(nvq_pkg.AsyncClient(home, autostart=False).status)


def test_bad_submit_option(nvq: Nvq) -> None:
    q = nvq_pkg.Client(nvq.home, autostart=False)
    with pytest.raises(nvq_pkg.ClientError, match="vram: ") as caught:
        q.submit(["true"], vram="lots")
    assert caught.value.exit_code == 2
    with pytest.raises(TypeError, match="colour"):
        q.submit(["true"], colour="red")


def test_async_client(nvq: Nvq) -> None:
    nvq.ok("queue", "status")

    async def main() -> tuple[list[bytes], c.WaitResult, c.JobDetail]:
        async with nvq_pkg.AsyncClient(nvq.home, autostart=False) as q:
            job = await q.submit(["echo", "async"], gpus=0)
            done = await q.wait(job.id, timeout=60)
            chunks = [chunk async for chunk in q.logs(job.id)]
            return chunks, done, await q.show(job.id)

    chunks, done, detail = anyio.run(main)
    assert b"".join(chunks) == b"async\n"
    assert done.exit_code == 0 and detail.state is JobState.COMPLETED


def test_any_request_is_asked_without_a_method_of_its_own(nvq: Nvq) -> None:
    q = _client(nvq)
    job = q.submit("true", gpus=0)
    assert q.ask(c.ShowJob(id=job.id), c.JobDetail).id == job.id
    assert [j.id for j in q.ask(c.Wait(ids=[job.id]), list[Job])] == [job.id]
    with pytest.raises(TypeError, match="ShowJob is answered with"):
        q.ask(c.ShowJob(id=job.id), Job)

    async def asked() -> int:
        async with nvq_pkg.AsyncClient(nvq.home, autostart=False) as aq:
            return (await aq.ask(c.ShowJob(id=job.id), c.JobDetail)).id

    assert anyio.run(asked) == job.id
