"""`nvq job requeue`: running a finished job again without losing what it did. Pure.

The job keeps its id, so its record is overwritten by the next attempt; what the
attempt that ended produced is kept in the `job_requeued` event instead (its result,
exit code and state), which `job show` lists per attempt (`nvq.domain.attempts`). Its
logs are kept per attempt by the runner. Which artifacts the next attempt starts from
is asked: `keep` (resume from the last checkpoint: what a failed, lost or timed-out
job wants) or `fresh` (an empty `$NVQ_ARTIFACTS`: what a completed job wants, whose
final checkpoint would make it skip its work)."""

from __future__ import annotations

import msgspec

from nvq.domain import job_edit, transitions
from nvq.domain.transitions import TransitionError
from nvq.model import JobRecord, JobState, Outcome

ARTIFACT_MODES = ("keep", "fresh")


def artifacts_mode(state: JobState, asked: str | None) -> str:
    """What the next attempt starts from: `asked`, else fresh after a completed run
    (its last checkpoint is the end) and keep after any other ending."""
    if asked is not None:
        if asked not in ARTIFACT_MODES:
            raise TransitionError(f"--artifacts {asked}: expected keep or fresh")
        return asked
    return "fresh" if state is JobState.COMPLETED else "keep"


def requeue(
    job: JobRecord, *, by: str, now: float, artifacts: str | None, command: str | None = None
) -> Outcome:
    """`transitions.requeue`, with the ended attempt's result kept in its event and,
    with `command`, the command changed (checked as `job edit` checks it)."""
    mode = artifacts_mode(job.state, artifacts)
    outcome = transitions.requeue(job, by=by, now=now)
    assert outcome.job is not None
    (event,) = outcome.events
    data = {
        **event.data,
        "attempt": job.attempt,
        "exit_code": job.exit_code,
        "result": job.result,
        "artifacts": mode,
    }
    events = [msgspec.structs.replace(event, data=data)]
    # The next attempt's result starts empty: this one's is in the event.
    new = msgspec.structs.replace(outcome.job, result=None, result_error=None)
    if command is not None and command != job.spec.command:
        fields = job_edit.checked_changes(new, {"command": command})
        edited = job_edit.edit_fields(new, fields, by=by)
        if edited.job is not None:
            new = edited.job
            events += edited.events
    return Outcome(new, events)

