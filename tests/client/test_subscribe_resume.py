"""A subscription the daemon drops for falling behind is picked up again from the
last event the client saw, so the caller never misses or repeats one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nvq import control as c
from nvq.client import Client, ClientError
from nvq.model import Event


def _chunk(*ids: int) -> c.Chunk:
    events = [Event(id=i, time=0.0, kind="k", job_id=None, node=None) for i in ids]
    return c.Chunk(c.encoder.encode(events))


class ScriptedClient(Client):
    """The daemon's answers to each `Subscribe`, in turn; records what was asked."""

    def __init__(self, answers: list[list[c.Reply]]) -> None:
        super().__init__("/nonexistent", autostart=False)
        self.answers = answers
        self.asked: list[int] = []

    def exchange(self, request: c.Request) -> Iterator[c.Reply]:
        assert isinstance(request, c.Subscribe)
        self.asked.append(request.since)
        yield from self.answers.pop(0)


DROPPED = c.Done(data={"fell_behind": 2}, error="the event stream fell behind", exit_code=1)


def test_resumes_from_the_last_event_seen() -> None:
    q = ScriptedClient([[_chunk(1, 2), DROPPED], [_chunk(3), c.Done()]])
    assert [e.id for e in q.subscribe()] == [1, 2, 3]
    assert q.asked == [0, 2]


def test_without_resume_the_drop_is_an_error() -> None:
    q = ScriptedClient([[_chunk(1, 2), DROPPED]])
    with pytest.raises(ClientError, match="fell behind"):
        list(q.subscribe(resume=False))
