"""`Subscribe` in-process: the backlog from the store, then each commit's events as they
happen, each once, with the ids the store gave them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nvq import control as c
from nvq.daemon.core.state import State
from nvq.daemon.core.subscribers import Subscribers
from nvq.daemon.handlers.subscribe import FellBehind, subscribe
from nvq.model import Event
from tests.fakes.aio import run
from tests.fakes.daemon import event_kinds, running_daemon, submit
from tests.fakes.runner import FakeRunner


async def _next(stream: AsyncIterator[bytes]) -> list[Event]:
    return c.event_batch_decoder.decode(await anext(stream))


async def _until(stream: AsyncIterator[bytes], kind: str, job_id: int) -> list[Event]:
    seen: list[Event] = []
    while not any(e.kind == kind and e.job_id == job_id for e in seen):
        seen += await _next(stream)
    return seen


def test_backlog_then_live_events_each_once(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            first = await submit(core, "sleep 100", gpus=0)
            stream = await subscribe(core, c.Subscribe(since=0))
            backlog = await _next(stream)
            assert backlog[0].kind == "job_submitted" and backlog[0].job_id == first.id
            second = await submit(core, "true", gpus=0)
            seen = backlog + await _until(stream, "job_submitted", second.id)
            stored = await core.store.events()
            ids = [e.id for e in seen]
            assert ids == sorted(set(ids))
            assert seen == stored[: len(seen)]
            await stream.aclose()  # type: ignore[attr-defined]
            assert len(core.subscribers) == 0

    run(main)


def test_since_minus_one_and_a_job_filter(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            old = await submit(core, "true", gpus=0)
            await submit(core, "sleep 100", gpus=0)
            new_only = await subscribe(core, c.Subscribe(since=-1))
            watched = await submit(core, "sleep 100", gpus=0)
            fresh = await _until(new_only, "job_submitted", watched.id)
            submitted = [e.job_id for e in fresh if e.kind == "job_submitted"]
            assert submitted == [watched.id]
            one_job = await subscribe(core, c.Subscribe(since=0, job_id=old.id))
            got = await _until(one_job, "job_submitted", old.id)
            assert {e.job_id for e in got} == {old.id}
            assert [e.kind for e in got] == (await event_kinds(core, old.id))[: len(got)]

    run(main)


def test_a_reader_that_falls_behind_is_told_where_to_resume(tmp_path: Path) -> None:
    async def main() -> None:
        async with FakeRunner() as runner, running_daemon(tmp_path, {"local": runner}) as core:
            core.subscribers = Subscribers(limit=2)
            stream = await subscribe(core, c.Subscribe(since=-1))
            first = await submit(core, "sleep 100", gpus=0)
            read = await _until(stream, "job_submitted", first.id)
            for _ in range(3):  # nobody reads: the buffer overflows
                await submit(core, "sleep 100", gpus=0)
            with pytest.raises(FellBehind) as caught:
                while True:
                    read += await _next(stream)
            assert caught.value.last_id == read[-1].id
            assert len(core.subscribers) == 0

    run(main)


def test_commits_record_their_events_with_store_ids(tmp_path: Path) -> None:
    async def main() -> None:
        async with running_daemon(tmp_path, {}) as core:
            state: State = core
            job = await submit(core, "true", gpus=0)
            assert state.store.last_events[0].job_id == job.id
            assert state.store.last_events == (await state.store.events(job_id=job.id))[:1]

    run(main)
