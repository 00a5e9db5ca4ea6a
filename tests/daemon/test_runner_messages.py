"""Runner messages reach the daemon through one table (RUNNER_MESSAGES), as requests
reach it through HANDLERS: every member of the protocol's `RunnerMsg` has a row, and a
message without one is refused loudly rather than taken for a journaled event."""

from __future__ import annotations

import typing

import pytest

from nvq.daemon.core.nodes import NodeRuntime
from nvq.daemon.machines import runner_events
from nvq.daemon.machines.runner_events import RUNNER_MESSAGES, RunnerEvents
from nvq_runner import protocol as p
from tests.fakes.aio import run


def test_every_runner_message_has_exactly_one_answer() -> None:
    assert set(RUNNER_MESSAGES) == set(typing.get_args(p.RunnerMsg))


def test_journaled_events_go_to_the_journal_path() -> None:
    for event in typing.get_args(p.JournaledEvent):
        assert RUNNER_MESSAGES[event] is RunnerEvents._journaled_one


def test_a_message_without_a_row_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    table = dict(RUNNER_MESSAGES)
    del table[p.LeaseHeld]
    monkeypatch.setattr(runner_events, "RUNNER_MESSAGES", table)
    events = RunnerEvents.__new__(RunnerEvents)  # the dispatch reads no state before the row
    events._replaying = set()
    node = NodeRuntime(name="n1", config=None)

    async def main() -> None:
        with pytest.raises(TypeError, match="no answer registered for runner message LeaseHeld"):
            await events.on_message(node, p.LeaseHeld(seq=1))

    run(main)
