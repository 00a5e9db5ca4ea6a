"""A job no node could hold is refused at submit only once every node it could go to
has reported its cards: a node that has not might hold anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.daemon.core.errors import BadRequest
from nvq.model import JobState
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, nodes_config, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_refused_when_every_node_reported_accepted_while_one_has_not(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            FakeRunner(hostname="a") as a,
            running_daemon(tmp_path, {"a": a}, nodes_config("a", "b")) as core,
        ):
            await eventually(lambda: core.nodes["a"].hello is not None)
            # b never reported: it might have 9 cards, so the job waits for it.
            waiting = await submit(core, gpus=9)
            assert waiting.state is JobState.PENDING
            # a pin to the node that did report is judged by that node alone.
            with pytest.raises(BadRequest) as refused:
                await submit(core, gpus=9, node="a")
            assert str(refused.value) == (
                "no node can ever run this job: "
                "needs 9 GPUs; the most on any node matching --node 'a' is 2"
            )

    run(main)
