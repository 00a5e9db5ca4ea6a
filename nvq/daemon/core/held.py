"""The state's lock, held, as a type: the only way to commit a change.

`async with locked(state) as held:` takes `State.lock` and yields a `Held`; a function
that must run under the lock takes a `Held` (not a `State`), so mypy rejects a caller
that does not hold it, where a docstring could only ask. A `Held` is dead once its
block ends: a commit through one that escaped fails at once. The model is pueue's
`LockedState`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from nvq.daemon.core.effects import Effects
from nvq.daemon.core.state import State
from nvq.model import JobRecord, Tx


class Held:
    """Proof that the running task holds `state.lock`; `state` for everything else."""

    __slots__ = ("_live", "state")

    def __init__(self, state: State) -> None:
        self.state = state
        self._live = True

    async def commit(self, tx: Tx, fx: Effects | None = None) -> list[JobRecord]:
        """Write `tx` in one transaction, mirror it, then carry out `fx` (see
        `State.commit_held`). Returns the jobs `tx` inserted, with their ids."""
        if not self._live:
            raise RuntimeError("commit through a Held whose lock was released")
        return await self.state.commit_held(tx, fx)

    def release(self) -> None:
        self._live = False


@contextlib.asynccontextmanager
async def locked(state: State) -> AsyncIterator[Held]:
    """Take the state's lock; the `Held` it yields is the one way to commit."""
    async with state.lock:
        held = Held(state)
        try:
            yield held
        finally:
            held.release()
