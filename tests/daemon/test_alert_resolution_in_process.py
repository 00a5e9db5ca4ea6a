"""A node_down alert is resolved when the node is back: out of the open list, kept in
the history with what resolved it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from nvq.daemon.core.state import State
from nvq.store import alerts as alert_table
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, nodes_config, running_daemon
from tests.fakes.runner import FakeRunner


async def _alerts(core: State, *, include_acked: bool) -> list[tuple[str, str | None]]:
    found = await core.store.sync(lambda c: alert_table.alerts(c, include_acked=include_acked))
    return [(a.kind, a.acked_by) for a in found]


def test_node_down_is_resolved_when_the_node_is_back(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            FakeRunner(hostname="a") as a,
            running_daemon(tmp_path, {"a": a}, nodes_config("a")) as core,
        ):
            await eventually(lambda: core.nodes["a"].hello is not None)
            a.reachable = False
            await a.drop()
            opened: list[tuple[str, str | None]] = []

            async def down() -> bool:
                opened[:] = await _alerts(core, include_acked=False)
                return bool(opened)

            await _until(down)
            assert opened == [("node_down", None)]
            a.reachable = True

            async def resolved() -> bool:
                return not await _alerts(core, include_acked=False)

            await _until(resolved)
            history = await _alerts(core, include_acked=True)
            assert history == [("node_down", "resolved: a is back")]

    run(main)



async def _until(check: Callable[[], Awaitable[bool]]) -> None:
    with anyio.fail_after(20):
        while not await check():
            await anyio.sleep(0.05)
