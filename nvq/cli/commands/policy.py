"""`nvq job requeue|purge|edit|priority|pause|resume`: a job's place in the queue."""

from __future__ import annotations

import typer

from nvq import control as c
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.jobs import lines
from nvq.cli.render.output import emit
from nvq.cli.selectors import MineOpt, StateOpt, TagOpt, UserOpt, counted, selection
from nvq.client import Client
from nvq.control.plain import listed
from nvq.model import JobState

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("requeue")
def job_requeue(
    job_ids: list[int] = typer.Argument(..., help="Finished job ids."),
    artifacts: str = typer.Option(
        None,
        "--artifacts",
        help="Start from the last checkpoint (keep) or none (fresh). "
        "Default: fresh after completed, keep after failed/lost/timeout/cancelled.",
    ),
    edit: bool = typer.Option(False, "--edit", help="Change the command in $EDITOR first."),
    as_json: bool = JsonOpt,
) -> int:
    """Run finished jobs again (same id and note).

    Earlier attempts keep their logs (`job logs --attempt N`) and results (`job
    show`). With --artifacts fresh the stored checkpoint is set aside, not deleted."""
    if artifacts is not None and artifacts not in ("keep", "fresh"):
        raise CliError(f"--artifacts {artifacts}: expected keep or fresh", 2)
    command = None
    if edit:
        if len(job_ids) != 1:
            raise CliError("--edit changes one job's command: give one id", 2)
        command = edited_command(Client().show(job_ids[0]).command)
    jobs = Client().requeue(job_ids, artifacts=artifacts, command=command)
    text = "\n".join(requeued_line(j) for j in jobs) or "(no jobs)"
    emit(listed(c.Requeue, jobs), as_json, text)
    return 0


def requeued_line(job: c.Requeued) -> str:
    """`job 7 requeued (artifacts: fresh; attempt 1's set aside in …)`."""
    how = f"artifacts: {job.artifacts}"
    if job.artifacts == "keep":
        how += ", resumes from its last checkpoint"
    elif job.artifacts_kept is not None:
        how += f", attempt {job.attempt}'s set aside in {job.artifacts_kept}"
    return f"job {job.id} requeued ({how})"


@on_job.command("priority", context_settings={"ignore_unknown_options": True})
def job_priority(
    job_id: int = typer.Argument(..., help="Job id (array id with --array)."),
    value: str = typer.Argument(None, help="5 sets; +1 / -2 adjust."),
    up: int = typer.Option(None, "--up", help="Move a pending job K places earlier."),
    down: int = typer.Option(None, "--down", help="Move a pending job K places later."),
    array: bool = typer.Option(False, "--array", help="Apply to the array's waiting members."),
    as_json: bool = JsonOpt,
) -> int:
    """Change a job's place in the dispatch order."""
    given = [x for x in (value, up, down) if x is not None]
    if len(given) != 1:
        raise CliError("give exactly one of VALUE (5, +1, -2), --up K or --down K", 2)
    if value is not None:
        from nvq.domain.ordering import new_priority

        try:
            new_priority(0, value)
        except ValueError as exc:
            raise CliError(str(exc), 2) from None
    for k, flag in ((up, "--up"), (down, "--down")):
        if k is not None and k < 1:
            raise CliError(f"{flag} must be 1 or more", 2)
    places = up if up is not None else (-down if down is not None else None)
    jobs = Client().priority(job_id, value, up=places, array=array)
    text = "\n".join(f"job {j.id} priority {j.priority}" for j in jobs) or "(no jobs)"
    emit(listed(c.Priority, jobs), as_json, text)
    return 0


@on_job.command("pause")
def job_pause(
    job_ids: list[int] = typer.Argument(None, help="Job ids (array ids with --array)."),
    array: bool = typer.Option(False, "--array", help="Pause the arrays' waiting members."),
    user: str = UserOpt,
    mine: bool = MineOpt,
    state: list[str] = StateOpt,
    tag: str = TagOpt,
    as_json: bool = JsonOpt,
) -> int:
    """Keep jobs queued but unassigned; a running one is stopped and comes back paused.

    Without ids, --user/--mine/--state/--tag choose the live jobs you may change."""
    chosen = selection(job_ids, user=user, mine=mine, states=state, tag=tag)
    jobs = Client().pause(job_ids or [], array=array, select=chosen)
    emit(listed(c.Pause, jobs), as_json, lines(jobs, "paused") if chosen is None else counted(jobs, "paused"))
    return 0


@on_job.command("resume")
def job_resume(
    job_ids: list[int] = typer.Argument(
        None, help="Paused job ids (array ids with --array)."
    ),
    array: bool = typer.Option(False, "--array", help="Resume the arrays' paused members."),
    user: str = UserOpt,
    mine: bool = MineOpt,
    tag: str = TagOpt,
    as_json: bool = JsonOpt,
) -> int:
    """Put paused jobs back in line where they were.

    Without ids, --user/--mine/--tag choose the paused jobs you may change."""
    chosen = selection(job_ids, user=user, mine=mine, states=[], tag=tag)
    jobs = Client().resume(job_ids or [], array=array, select=chosen)
    said = "back in line"
    emit(listed(c.Resume, jobs), as_json, lines(jobs, said) if chosen is None else counted(jobs, said))
    return 0


@on_job.command("cancel")
def job_cancel(
    job_ids: list[int] = typer.Argument(None, help="Job ids."),
    array: bool = typer.Option(
        False, "--array", help="The ids are arrays: cancel members not yet running."
    ),
    user: str = UserOpt,
    mine: bool = MineOpt,
    state: list[str] = StateOpt,
    tag: str = TagOpt,
    as_json: bool = JsonOpt,
) -> int:
    """Cancel jobs; a running one's process group is killed.

    Without ids, --user/--mine/--state/--tag choose the live jobs to cancel, of
    those you may change (a member's: their own; `job cancel --user alice --state
    pending`, as scancel -u). With ids they narrow the jobs named."""
    chosen = selection(job_ids, user=user, mine=mine, states=state, tag=tag)
    jobs = Client().cancel(job_ids or [], array=array, select=chosen)
    # A job not shown cancelled: the queue host's disk is full, the cancel waits there.
    said = [
        f"job {j.id} cancelled" if j.state is JobState.CANCELLED
        else f"job {j.id}: cancel recorded; written when the disk has room"
        for j in jobs
    ]
    if array:
        touched = {j.array_id for j in jobs}
        said += [
            f"array {a}: nothing to cancel, every member has ended"
            for a in job_ids or [] if a not in touched
        ]
    emit(listed(c.Cancel, jobs), as_json, "\n".join(said) if chosen is None else counted(jobs, "cancelled", said))
    return 0


@on_job.command("release")
def job_release(
    job_ids: list[int] = typer.Argument(None, help="Held job ids."),
    user: str = UserOpt,
    mine: bool = MineOpt,
    tag: str = TagOpt,
    as_json: bool = JsonOpt,
) -> int:
    """Run held jobs without the prerequisites that ended badly.

    Without ids, --user/--mine/--tag choose the held jobs you may change."""
    chosen = selection(job_ids, user=user, mine=mine, states=[], tag=tag)
    jobs = Client().release(job_ids or [], select=chosen)
    text = lines(jobs, "released") if chosen is None else counted(jobs, "released")
    emit(listed(c.Release, jobs), as_json, text)
    return 0


def edited_command(command: str) -> str:
    """The command as the user leaves it in $EDITOR (one line; `#` lines dropped)."""
    import click

    text = click.edit(command + "\n# the command to run; an empty one cancels\n")
    if text is None:
        raise CliError("requeue cancelled: the editor was closed without saving", 1)
    kept = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not kept:
        raise CliError("requeue cancelled: the command is empty", 1)
    return "\n".join(kept)
