"""Each sample a node sends, seen from each of its running jobs: what shared their
cards (nvq.domain.contention), tallied per attempt until the commit that ends it.
The tallies are this feature's own: the commit asks for the records of the attempts
it ends (`closing`, named to the state by `State.follow`)."""

from __future__ import annotations

from collections.abc import Mapping

from nvq.daemon.core.state import State
from nvq.domain import contention
from nvq.model import JobRecord, NewEvent, Tx
from nvq_runner.protocol import Sample


class ContentionWatch:
    def __init__(self, state: State) -> None:
        self.state = state
        # running attempt → what shared its cards so far
        self.tallies: dict[tuple[int, int], contention.Tally] = {}

    def on_sample(self, node: str, sample: Sample) -> None:
        on_node = [j for j in self.state.index.running.values() if j.node == node]
        if not on_node:
            return
        placed = contention.placed_on(on_node)
        for job in on_node:
            # Before its process started, nothing of its own is there to be shared.
            if not job.gpus or job.started_at is None:
                continue
            tally = self.tallies.get((job.id, job.attempt))
            if tally is None:
                tally = self.tallies[(job.id, job.attempt)] = contention.Tally()
            tally.add(contention.observe(job.id, job.gpus, sample.gpus, placed))

    def closing(self, tx: Tx, before: Mapping[int, JobRecord]) -> list[NewEvent]:
        """The records of the attempts `tx` ends, as events of the same commit."""
        return contention.closing(tx.jobs, before, self.tallies) if self.tallies else []
