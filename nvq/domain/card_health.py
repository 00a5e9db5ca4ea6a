"""What a card's faults do. Pure.

* `unhealthy_events`: a sample whose runner reports faults on a card it did not report
  in the node's previous sample raises `gpu_unhealthy` (after a reconnect, every faulty
  card once more: the alert's key, card + evidence, keeps that from alerting twice).
  Evidence an admin returned the card despite (`queue resume NODE:IDX`) is left out.
* `card_failed`: an attempt that failed while its runner saw faults begin on its
  cards goes back to the queue without spending a `--retries` restart (the card
  failed, not the job), and the cards are marked unhealthy in the same transaction,
  so the next placement pass cannot put it on them again whatever order the exit
  and the next sample arrive in.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from nvq.domain.card_marks import CardMark, unacked
from nvq.model import JobRecord, JobState, NewEvent, Outcome
from nvq_runner.protocol import JobExited, Sample


def unhealthy_events(
    node: str, previous: Sample | None, sample: Sample,
    marks: Mapping[int, CardMark] | None = None,
) -> list[NewEvent]:
    before = {g.index: g.faults for g in previous.gpus} if previous else {}
    out = []
    for g in sample.gpus:
        faults = unacked((marks or {}).get(g.index), g.faults)
        if faults and g.faults != before.get(g.index):
            out.append(NewEvent("gpu_unhealthy", None, node, {"card": g.index, "faults": faults}))
    return out


def fails_the_card(ev: JobExited) -> bool:
    """The attempt failed by its own exit while faults began on its cards."""
    return bool(ev.card_faults) and ev.reason == "exit" and ev.exit_code != 0


def card_failed(job: JobRecord, ev: JobExited, node: str, details: dict[str, object]) -> Outcome:
    """`job` (running) failed on cards its runner saw fail: back in line, keeping its
    place, with the cards marked unhealthy by the same transaction."""
    cards = sorted(ev.card_faults.items())
    said = "; ".join(f"{node}:{i} {', '.join(f)}" for i, f in cards)
    why = f"card failed ({said})"
    new = msgspec.structs.replace(
        job, state=JobState.PENDING, node=None, gpus=[], pid=None, progress=None,
        reason=f"requeued: {why}; no retry spent",
        stderr_tail=ev.stderr_tail or None,
    )
    data = {**details, "reason": why, "cards": {str(i): f for i, f in cards}}
    events = [NewEvent("job_card_failed", job.id, node, data)]
    events += [
        NewEvent("gpu_unhealthy", None, node, {"card": i, "faults": list(f), "job": job.id})
        for i, f in cards
    ]
    return Outcome(new, events)
