"""The live event stream through the typed clients and `nvq queue events --follow`,
against a real daemon: what a TUI or a web page built on the client sees."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio

import nvq as nvq_pkg
from nvq.model import Event
from tests.cluster import Nvq


def _client(nvq: Nvq) -> nvq_pkg.Client:
    nvq.ok("queue", "status")  # the CLI starts the daemon with the test's environment
    return nvq_pkg.Client(nvq.home, autostart=False)


def test_client_subscribe_sees_a_job_from_submit_to_end(nvq: Nvq) -> None:
    with _client(nvq) as q:
        before = q.submit("true", gpus=0)
        q.wait(before.id, timeout=60)
        stream = q.subscribe(q.events()[-1].id)
        job = q.submit("echo hi", gpus=0)
        kinds: list[str] = []
        for event in stream:
            assert event.job_id == job.id  # nothing from before the subscription
            kinds.append(event.kind)
            if event.kind == "job_completed":
                break
        stream.close()
        assert kinds[0] == "job_submitted" and "job_started" in kinds
        assert kinds == [e.kind for e in q.events(job=job.id)]


def test_async_client_replays_the_backlog_then_follows(nvq: Nvq) -> None:
    nvq.ok("queue", "status")

    async def main() -> list[Event]:
        async with nvq_pkg.AsyncClient(nvq.home, autostart=False) as q:
            first = await q.submit("true", gpus=0)
            await q.wait(first.id, timeout=60)
            seen: list[Event] = []
            second = None
            async for event in q.subscribe(0):
                seen.append(event)
                if event.kind == "job_completed" and event.job_id == first.id:
                    second = await q.submit("true", gpus=0)
                if second is not None and (event.job_id, event.kind) == (
                    second.id,
                    "job_completed",
                ):
                    break
            return seen

    seen = anyio.run(main)
    stored = nvq_pkg.Client(nvq.home, autostart=False).events()
    assert [e.id for e in seen] == [e.id for e in stored][: len(seen)]
    assert [e.kind for e in seen].count("job_completed") == 2


def test_queue_events_follow_prints_one_json_document_per_event(nvq: Nvq) -> None:
    nvq.ok("queue", "status")
    follow = subprocess.Popen(
        [sys.executable, "-m", "nvq", "queue", "events", "--follow", "--json", "--since", "0"],
        env=nvq.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        job = nvq.submit("--gpus", "0", "--", "true")
        assert follow.stdout is not None
        kinds = []
        for line in follow.stdout:
            event = json.loads(line)
            assert list(event) == [
                "id", "time", "kind", "job_id", "node", "data", "classes", "end"]
            if event["job_id"] == job["id"]:
                kinds.append(event["kind"])
            if event["kind"] == "job_completed":
                break
        assert kinds[0] == "job_submitted" and kinds[-1] == "job_completed"
    finally:
        follow.terminate()
        follow.wait(10)
