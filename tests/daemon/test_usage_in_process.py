"""Fair share's ledger in the daemon: an attempt that ends is charged in the same
commit (a `charges` row and its account's decayed total), part of a card counts as
that part, and the ledger is read back by the next daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvq.domain import fair_share as fs
from tests.fakes.aio import run
from tests.fakes.daemon import eventually, running_daemon, submit
from tests.fakes.runner import FakeRunner


def test_an_ended_attempt_is_charged_and_the_ledger_survives_a_restart(tmp_path: Path) -> None:
    async def main() -> None:
        runner = FakeRunner(exits={1: 0, 2: 0})
        async with runner, running_daemon(tmp_path, {"local": runner}) as core:
            whole = await submit(core, gpus=1)  # no --vram: a whole card
            await eventually(lambda: whole.id not in core.jobs)
            quarter = await submit(core, gpus=1, vram_mb=6 * 1024)  # a quarter of 24 GiB
            await eventually(lambda: quarter.id not in core.jobs)
            charges = await core.store.charges_since(0.0)
            assert [(c.job_id, c.attempt, c.user, c.weight) for c in charges] == [
                (whole.id, 1, "tester", 1.0),
                (quarter.id, 1, "tester", 0.25),
            ]
            kept: dict[str, fs.Usage] = dict(core.usage.ledger)
            assert set(kept) == {"user:tester", "submitter:tester"}
            # What the attempts lasted, card-weighted (no decay to speak of in seconds).
            lasted = sum(c.gpu_seconds for c in charges)
            assert kept["user:tester"].gpu_seconds == pytest.approx(lasted, rel=1e-3, abs=1e-9)
            assert kept["submitter:tester"] == kept["user:tester"]
        async with running_daemon(tmp_path, {}) as again:
            assert again.usage.ledger == kept

    run(main)
