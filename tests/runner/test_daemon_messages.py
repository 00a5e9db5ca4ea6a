"""The daemon's messages reach the runner through one table (DAEMON_MESSAGES): every
member of the protocol's `DaemonMsg` has a row, and a message without one is refused
loudly rather than dropped."""

from __future__ import annotations

import typing

import pytest

from nvq_runner import protocol as p
from nvq_runner import server
from nvq_runner.daemon_messages import DAEMON_MESSAGES
from nvq_runner.server import Runner


def test_every_daemon_message_has_exactly_one_answer() -> None:
    assert set(DAEMON_MESSAGES) == set(typing.get_args(p.DaemonMsg))


def test_a_message_without_a_row_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    table = dict(DAEMON_MESSAGES)
    del table[p.Sync]
    monkeypatch.setattr(server, "DAEMON_MESSAGES", table)
    runner = Runner.__new__(Runner)  # the dispatch reads no state before the row
    with pytest.raises(TypeError, match="no answer registered for daemon message Sync"):
        runner._dispatch(None, p.Sync())  # type: ignore[arg-type]
