"""A runner began or finished a job's `--setup` (`SetupPhase`, journaled): the job's
`phase` is "setup" in between (`job ls` shows the state `setup`; its cards stay
held), with the events `setup_started` and `setup_done`, applied exactly once as every
journaled event is (`nvq.daemon.core.journaled`: the node's seq commits with them). A failed setup arrives as a
`LaunchFailed` with `phase="setup"` (nvq.domain.transitions.launch_failed)."""

from __future__ import annotations

import msgspec

from nvq.model import JobRecord, JobState, NewEvent
from nvq_runner import protocol as p


def applied(job: JobRecord, ev: p.SetupPhase, node: str) -> tuple[JobRecord | None, NewEvent | None]:
    """Pure: the job and event a `SetupPhase` makes (None, None: a stale report)."""
    if job.state is not JobState.RUNNING or job.attempt != ev.attempt or job.node != node:
        return None, None
    if ev.done:
        data: dict[str, object] = {"attempt": ev.attempt}
        if ev.cached:
            data["cached"] = True
        return (msgspec.structs.replace(job, phase=""),
                NewEvent("setup_done", job.id, node, data))
    return (msgspec.structs.replace(job, phase="setup"),
            NewEvent("setup_started", job.id, node, {"attempt": ev.attempt}))
