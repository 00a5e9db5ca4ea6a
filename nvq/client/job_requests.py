"""The clients' requests about jobs: submit, list, show, wait, change, move, their files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nvq import control as c
from nvq.client.calls import Requesting, id_list, raw_data, reads, returns, wait_result
from nvq.client.spec import job_spec
from nvq.domain.report import UsageReport
from nvq.model import Job, JobSpec


class JobRequests(Requesting):
    """Requests about jobs (`nvq job …`)."""

    @returns(c.Submit, c.Submitted)
    def submit(self, /, command: list[str] | str, **options: Any) -> c.Request:
        """Queue a job: `submit(["python", "train.py"], vram="20GiB", gpus=1)`. Options
        are JobSpec's fields; `vram`/`memory` take "20GiB" (or MiB), `timeout` and
        `max_runtime` take "2h" (or seconds)."""
        return c.Submit(spec=job_spec(command, **options))

    @returns(c.Submit, c.Submitted)
    def submit_spec(self, spec: JobSpec) -> c.Request:
        return c.Submit(spec=spec)

    @returns(c.SubmitDry, c.SubmitPreview)
    def submit_preview(self, spec: JobSpec) -> c.Request:
        """Every check of a submit, then where it would start now or why it would wait."""
        return c.SubmitDry(spec=spec)

    @returns(c.ListJobs, list[c.JobRow])
    def jobs(
        self,
        *,
        active: bool = False,
        states: Sequence[str] | None = None,
        limit: int | None = None,
        array: int | None = None,
    ) -> c.Request:
        """Jobs by id: only pending and running with `active`, the newest `limit`."""
        return c.ListJobs(
            active=active, states=list(states) if states else None, limit=limit, array=array
        )

    @returns(c.JobWindow, c.JobPage)
    def job_window(self, window: c.JobWindow) -> c.Request:
        """`job ls`: the live jobs and the newest finished ones, narrowed by `window`'s
        filters; `more` says whether the window left jobs out."""
        return window

    @returns(c.ShowJob, c.JobDetail)
    def show(self, id: int, *, logs: int = 0, reveal: bool = False) -> c.Request:
        """One job with its events, attempts, why it waits, and `logs` lines of output;
        `reveal`: secret-looking values will be shown (the owner's and admins' right)."""
        return c.ShowJob(id=id, logs=logs, reveal=reveal)

    @returns(c.Why, c.WhyReport)
    def why(self, id: int) -> c.Request:
        """Why it waits: its reason, and per node each constraint with the numbers."""
        return c.Why(id=id)

    @returns(c.Report, UsageReport)
    def report(self, since: float, until: float, *, by: str = "user") -> c.Request:
        """The usage report over [since, until) (Unix seconds), one row per user,
        submitter, tag, node or day: GPU-hours, jobs by outcome, waits, preemptions."""
        return c.Report(since=since, until=until, by=by)

    @reads(wait_result)
    def wait(self, ids: int | Sequence[int], timeout: float | None = None) -> c.Request:
        """Block until the jobs end, or one ends badly (exit_code 1, the rest in
        `still_going`), or `timeout` seconds pass (exit_code 2)."""
        return c.Wait(ids=id_list(ids), timeout=timeout)

    @returns(c.Cancel, list[Job])
    def cancel(
        self, ids: int | Sequence[int], *, array: bool = False,
        select: c.JobSelection | None = None,
    ) -> c.Request:
        """Cancel jobs: the ids, or (with `select` and no ids) the live jobs it chooses."""
        return c.Cancel(ids=id_list(ids), array=array, select=select)

    @returns(c.Release, list[Job])
    def release(
        self, ids: int | Sequence[int], *, select: c.JobSelection | None = None
    ) -> c.Request:
        """Run held jobs without the prerequisites that ended badly."""
        return c.Release(ids=id_list(ids), select=select)

    @returns(c.Note, Job)
    def note(
        self, id: int, text: str | None = None, *, append: str | None = None, clear: bool = False
    ) -> c.Request:
        return c.Note(id=id, text=text, append=append, clear=clear)

    @reads(raw_data)
    def result(self, id: int, *, set_json: str | None = None) -> c.Request:
        """The job's result.json payload; `set_json` stores this JSON text instead."""
        return c.Result(id=id, set_json=set_json)

    @returns(c.Requeue, list[c.Requeued])
    def requeue(
        self, ids: int | Sequence[int], *, artifacts: str | None = None, command: str | None = None
    ) -> c.Request:
        return c.Requeue(ids=id_list(ids), artifacts=artifacts, command=command)

    @returns(c.Purge, c.Purged)
    def purge(
        self,
        *,
        before: float | None = None,
        dry_run: bool = False,
        ids: Sequence[int] | None = None,
    ) -> c.Request:
        """Forget finished jobs (that ended before `before`, a Unix time; only `ids`,
        if given). `dry_run`: forget nothing, and say which jobs it would."""
        return c.Purge(before=before, dry_run=dry_run, ids=None if ids is None else list(ids))

    @returns(c.EditJob, Job)
    def edit_job(self, id: int, changes: dict[str, Any]) -> c.Request:
        """Change what a job asks for: JobSpec field → new value (a running job: only
        its name, note, tags and priority)."""
        return c.EditJob(id=id, changes=changes)

    @returns(c.Edit, Job)
    def edit(
        self, id: int, *, drop_after: Sequence[int] = (), add_after: Sequence[int] = ()
    ) -> c.Request:
        return c.Edit(id=id, drop_after=list(drop_after), add_after=list(add_after))

    @returns(c.Priority, list[Job])
    def priority(
        self,
        ids: int | Sequence[int],
        change: str | None = None,
        *,
        up: int | None = None,
        array: bool = False,
    ) -> c.Request:
        """`change` "5" sets, "+1"/"-2" adjust; or move `up` places (negative: down)."""
        return c.Priority(ids=id_list(ids), change=change, up=up, array=array)

    @returns(c.Pause, list[Job])
    def pause(
        self, ids: int | Sequence[int], *, array: bool = False,
        select: c.JobSelection | None = None,
    ) -> c.Request:
        return c.Pause(ids=id_list(ids), array=array, select=select)

    @returns(c.Resume, list[Job])
    def resume(
        self, ids: int | Sequence[int], *, array: bool = False,
        select: c.JobSelection | None = None,
    ) -> c.Request:
        return c.Resume(ids=id_list(ids), array=array, select=select)

    @returns(c.Move, c.Moved)
    def move(self, id: int, to: str) -> c.Request:
        return c.Move(id=id, to=to)

    @returns(c.JobArtifacts, c.Artifacts)
    def artifacts(self, id: int) -> c.Request:
        return c.JobArtifacts(id=id)
