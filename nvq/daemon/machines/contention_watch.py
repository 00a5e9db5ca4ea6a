"""Each sample a node sends, seen from each of its running jobs: what shared their
cards (nvq.domain.contention), tallied per attempt until the commit that ends it."""

from __future__ import annotations

from nvq.daemon.core.state import State
from nvq.domain import contention
from nvq_runner.protocol import Sample


def on_sample(state: State, node: str, sample: Sample) -> None:
    on_node = [j for j in state.index.running.values() if j.node == node]
    if not on_node:
        return
    placed = contention.placed_on(on_node)
    for job in on_node:
        # Before its process started, nothing of its own is there to be shared.
        if not job.gpus or job.started_at is None:
            continue
        tally = state.tallies.get((job.id, job.attempt))
        if tally is None:
            tally = state.tallies[(job.id, job.attempt)] = contention.Tally()
        tally.add(contention.observe(job.id, job.gpus, sample.gpus, placed))
