"""Leases, the daemon's side: pure decisions about attempts a runner stopped itself
because it heard nothing from the daemon for its lease (`AttemptFenced`), kills
owed to attempts found still running when a node returns, and `--no-reassign` jobs
that ran on through a partition. No I/O, no clock.

* A fenced attempt of a job the daemon still thinks runs there: the job goes back to
  the queue at once (the machine was at fault, no `--retries` spent), with a reap
  (`fenced`) so it is placed again only once the old attempt's exit is in and its
  artifacts synced.
* A fenced attempt the daemon had already given up on (reassigned after
  `node_grace`): its reap becomes `fenced`, so the job waits for the kill's exit
  (which, a kill, is never taken for the job's outcome: `nvq.domain.exits`).
* A `--no-reassign` job marked `lost` after `node_grace` whose attempt is still
  running when its node returns was never run elsewhere: it is `running` again, not
  killed.
"""

from __future__ import annotations

import msgspec

from nvq.domain.reassign import back_to_queue
from nvq.model import JobRecord, JobState, NewEvent, Outcome, Reap, Tx
from nvq_runner.protocol import AttemptFenced

FENCED = "fenced"


def fenced_data(ev: AttemptFenced) -> dict[str, object]:
    return {
        "attempt": ev.attempt,
        "silent_for": round(ev.silent_for, 1),
        "lease": ev.lease,
        "fenced_at": ev.at,
    }


def fenced(job: JobRecord, ev: AttemptFenced, node: str, reap: Reap | None) -> Outcome:
    """What the runner's stopping of an attempt does to its job. The outcome always
    carries the `attempt_fenced` event; `job` is None when the job had moved on."""
    data = fenced_data(ev)
    why = (
        f"node {node} heard nothing from the daemon for {ev.silent_for:.0f}s "
        f"(lease {ev.lease:g}s) and stopped attempt {ev.attempt}"
    )
    if job.state is JobState.RUNNING and job.node == node and job.attempt == ev.attempt:
        new = back_to_queue(job, f"fenced: {why}")
        event = NewEvent("attempt_fenced", job.id, node, {**data, "requeued": True})
        return Outcome(new, [event], Reap(job.id, ev.attempt, node, FENCED))
    event = NewEvent("attempt_fenced", job.id, node, {**data, "requeued": False})
    if reap is not None and reap.node == node and reap.reason == "reassigned":
        # Already given back to the queue: the kill's exit must not count.
        return Outcome(None, [event], msgspec.structs.replace(reap, reason=FENCED))
    return Outcome(None, [event])


def record_fenced(tx: Tx, outcome: Outcome) -> bool:
    """Add a `fenced` outcome to `tx` (its event even when the job had moved on);
    True when the job went back to the queue."""
    tx.events.extend(outcome.events)
    if outcome.reap is not None:
        tx.add_reaps.append(outcome.reap)
    if outcome.job is None:
        return False
    tx.jobs.append(outcome.job)
    return True


def resumed(job: JobRecord, attempt: int, node: str, reap: Reap | None) -> Outcome:
    """A `--no-reassign` job called `lost` while its node was away is found still
    running there: it was never run elsewhere, so it runs on."""
    if (
        reap is None
        or reap.reason != "lost"
        or reap.node != node
        or not job.spec.no_reassign
        or job.state is not JobState.LOST
        or job.attempt != attempt
        or job.node != node
    ):
        return Outcome()
    new = msgspec.structs.replace(job, state=JobState.RUNNING, ended_at=None, reason=None)
    event = NewEvent("job_found", job.id, node, {"attempt": attempt, "overrides": "lost"})
    return Outcome(new, [event])


def owed_kill_event(reap: Reap) -> NewEvent:
    """An attempt found running when its node returned, killed now."""
    return NewEvent(
        "owed_kill", reap.job_id, reap.node, {"attempt": reap.attempt, "reason": reap.reason}
    )
