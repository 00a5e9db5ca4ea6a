"""Which samples raise a `gpu_unhealthy` alert: a card whose runner reports faults it
did not report in the node's previous sample (after a reconnect, every faulty card
once more: the alert's key, card + evidence, keeps that from alerting twice)."""

from __future__ import annotations

from nvq.model import NewEvent
from nvq_runner.protocol import Sample


def unhealthy_events(node: str, previous: Sample | None, sample: Sample) -> list[NewEvent]:
    before = {g.index: g.faults for g in previous.gpus} if previous else {}
    return [
        NewEvent("gpu_unhealthy", None, node, {"card": g.index, "faults": list(g.faults)})
        for g in sample.gpus
        if g.faults and g.faults != before.get(g.index)
    ]
