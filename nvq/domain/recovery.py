"""Jobs queue.db forgot but a node still knows (a damaged WAL dropped them, or an older
backup was restored): their records made again from what the node kept of each
attempt (`StartRecord`: the `Start` it was given, when it started, how it ended).
Pure: no I/O, no clock.

A recovered job keeps its id, its attempt and its identity (nonce), so its logs and
artifacts on the node are its own again; it is tagged `recovered`. One that still
runs is `running` and finishes as any job; one that ended has the outcome its exit
record says; one whose end is unknown is `lost`.
"""

from __future__ import annotations

from nvq.model import JobRecord, JobSpec, JobState, NewAlert, NewEvent
from nvq_runner.protocol import StartRecord

TAG = "recovered"
ALERT_KIND = "jobs_recovered"


def _ending(rec: StartRecord, node: str) -> tuple[JobState, str | None]:
    where = f"recovered from node {node}'s start record"
    if rec.running:
        return JobState.RUNNING, where
    if rec.exit_code is None:
        return JobState.LOST, f"lost: {where}, its end unknown"
    if rec.exit_code == 0 and not rec.killed:
        return JobState.COMPLETED, where
    how = f"killed by signal {rec.signal}" if rec.signal else f"exited with code {rec.exit_code}"
    return JobState.FAILED, f"{how} ({where})"


def recovered_job(rec: StartRecord, node: str, owner: str) -> JobRecord:
    """The job as the node knew it. `owner`: the queue owner's user name (a `Start`
    names the user only when the job runs as someone else)."""
    start = rec.start
    state, reason = _ending(rec, node)
    user = start.user or owner
    spec = JobSpec(
        name=start.name,
        command=start.command,
        submitter=user,
        gpus=len(start.gpus),
        timeout=start.timeout,
        env=dict(start.env),
        workdir=start.workdir,
        tags=[TAG],
        memory_mb=start.memory_mb or 0,
        no_reassign=not start.reassign,
        manifest_id=start.manifest_id or None,
        subdir=start.subdir,
        env_captured=dict(start.env_captured) if start.env_mode != "runner" else None,
        setup=start.setup or None,
        setup_files=list(start.setup_files),
        interactive=start.interactive,
    )
    return JobRecord(
        id=start.job_id,
        state=state,
        user=user,
        created_at=rec.started_at,
        spec=spec,
        attempt=start.attempt,
        node=node,
        gpus=list(start.gpus),
        pid=rec.pid,
        dispatched_at=rec.started_at,
        started_at=rec.started_at,
        ended_at=rec.ended_at if state is not JobState.RUNNING else None,
        exit_code=rec.exit_code,
        signal=rec.signal,
        reason=reason,
        rank=float(start.job_id),
        nonce=start.nonce,
    )


def event(job: JobRecord) -> NewEvent:
    data = {"attempt": job.attempt, "state": job.state.value, "exit_code": job.exit_code}
    return NewEvent("job_recovered", job.id, job.node, data)


def alert(node: str, jobs: list[JobRecord]) -> NewAlert:
    """One alert for what one node's records brought back."""
    ids = ", ".join(str(j.id) for j in jobs[:20]) + (" …" if len(jobs) > 20 else "")
    running = sum(j.state is JobState.RUNNING for j in jobs)
    return NewAlert(
        kind=ALERT_KIND,
        severity="warning",
        key=f"{ALERT_KIND}:{node}:{jobs[0].id}:{jobs[-1].id}:{len(jobs)}",
        message=(
            f"queue.db had forgotten jobs {ids} that node {node} knows (a damaged or "
            f"restored queue.db): recovered from its start records, tagged '{TAG}'; "
            f"{running} still running go on"
        ),
        node=node,
    )
