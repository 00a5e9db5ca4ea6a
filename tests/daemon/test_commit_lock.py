"""`Held.commit` is the one place a change is written and then acted on: only a task
inside `locked(state)` has a `Held`, one that escaped its block is refused, and a
change's effects are carried out only once the change is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.daemon.core.effects import Effects
from nvq.daemon.core.held import locked
from nvq.model import NewEvent, Tx
from tests.fakes.aio import run
from tests.fakes.daemon import running_daemon


def test_commit_refuses_a_caller_without_the_lock(tmp_path: Path) -> None:
    async def main() -> None:
        async with running_daemon(tmp_path, {}) as core:
            event = NewEvent("job_note", None, None, {})
            with pytest.raises(AssertionError, match="lock"):
                await core.commit_held(Tx(events=[event]))
            async with locked(core) as held:
                await held.commit(Tx(events=[event]))
            with pytest.raises(RuntimeError, match="released"):
                await held.commit(Tx(events=[event]))
            kinds = [e.kind for e in await core.store.events()]
            assert kinds.count("job_note") == 1

    run(main)


def test_effects_wait_for_the_write(tmp_path: Path) -> None:
    async def main() -> None:
        async with running_daemon(tmp_path, {}) as core:
            kicked: list[bool] = []
            real_kick = core.kick

            def kick() -> None:
                kicked.append(True)
                real_kick()

            core.kick = kick  # type: ignore[method-assign]

            async def failing(tx: Tx) -> list[object]:
                raise OSError("the write failed")

            real_commit = core.store.commit
            core.store.commit = failing  # type: ignore[method-assign,assignment]
            event = NewEvent("job_note", None, None, {})
            async with locked(core) as held:
                with pytest.raises(OSError):
                    await held.commit(Tx(events=[event]), Effects(kick=True))
                assert kicked == []  # nothing acted on for a change never written
                core.store.commit = real_commit  # type: ignore[method-assign]
                await held.commit(Tx(events=[event]), Effects(kick=True))
            assert kicked == [True]

    run(main)
