"""`nvq job requeue|purge|edit|priority|pause|resume`: a job's place in the queue."""

from __future__ import annotations

import sys
from typing import Any

import typer

from nvq import control as c
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError, duration, ended_before, env_pairs, ids, size
from nvq.cli.render.jobs import lines
from nvq.cli.render.output import emit
from nvq.client import Client

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
    emit(jobs, as_json, text)
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


def requeued_line(job: c.Requeued) -> str:
    """`job 7 requeued (artifacts: fresh; attempt 1's set aside in …)`."""
    how = f"artifacts: {job.artifacts}"
    if job.artifacts == "keep":
        how += ", resumes from its last checkpoint"
    elif job.artifacts_kept is not None:
        how += f", attempt {job.attempt}'s set aside in {job.artifacts_kept}"
    return f"job {job.id} requeued ({how})"


@on_job.command("purge")
def job_purge(
    before: str = typer.Option(None, "--before", help="Only jobs that ended before this date."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print what it would delete."),
    as_json: bool = JsonOpt,
) -> int:
    """Forget finished jobs (yours; an admin's purge forgets everyone's).

    Their artifacts go with them. It asks first on a terminal; elsewhere give --yes."""
    client = Client()
    when = ended_before(before)
    found = client.purge(before=when, dry_run=True)
    if dry_run:
        emit({"would_purge": len(found.ids), "ids": found.ids}, as_json, purge_plan(found.ids))
        return 0
    if found.ids and not yes:
        if not sys.stdin.isatty():
            raise CliError(
                f"{purge_plan(found.ids)}; not a terminal, so not asking: give --yes", 2
            )
        print(purge_plan(found.ids), file=sys.stderr)
        if not typer.confirm("Delete them?", err=True):
            raise CliError("nothing purged", 1)
    doc = client.purge(before=when, ids=found.ids) if found.ids else found
    emit(doc, as_json, f"purged {doc.purged} finished jobs")
    return 0


def purge_plan(ids: list[int]) -> str:
    """`would purge 3 finished jobs and their artifacts: 4-5, 9`."""
    if not ids:
        return "no finished jobs to purge"
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    spans = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return f"would purge {len(ids)} finished jobs and their artifacts: {spans}"


@on_job.command("edit")
def job_edit(
    job_id: int = typer.Argument(..., help="A waiting (pending, held or paused) job."),
    drop_after: str = typer.Option(None, "--drop-after", help="Stop waiting for these: 12,13."),
    add_after: str = typer.Option(None, "--add-after", help="Also wait for these to complete."),
    node: str = typer.Option(None, "--node", help="Pin to a node (prefix match)."),
    vram: str = typer.Option(None, "--vram", help="VRAM to reserve on each GPU."),
    gpus: int = typer.Option(None, "--gpus", help="GPUs needed; 0 for a CPU-only job."),
    memory: str = typer.Option(None, "--memory", help="Host RAM it needs (and its limit)."),
    cuda: str = typer.Option(None, "--cuda", help="Minimum driver CUDA version."),
    image: str = typer.Option(None, "--image", help="Run it in this container image."),
    timeout: str = typer.Option(None, "--timeout", help="Kill it after this long."),
    priority: int = typer.Option(None, "--priority", help="Higher runs first."),
    name: str = typer.Option(None, "--name", "-n", help="A short label."),
    note: str = typer.Option(None, "--note", help="What the job is for."),
    tag: list[str] = typer.Option(None, "--tag", help="Its tags (replaces them), repeatable."),
    env: list[str] = typer.Option(
        None, "--env", help="KEY=VALUE (replaces its environment), repeatable."
    ),
    lane: str = typer.Option(None, "--lane", help="Move it to the tail of a lane: NODE:GPU."),
    command: str = typer.Option(None, "--command", help="The command, as one string."),
    signal: str = typer.Option(
        None, "--signal", help="Send SIG this long before --timeout ends it: USR1@5m."
    ),
    preemptible: bool = typer.Option(
        None, "--preemptible/--not-preemptible", help="Whether a more urgent job may stop it."
    ),
    reservation: str = typer.Option(
        None, "--reservation", help="Run in this reservation ('' for none)."
    ),
    notify_on: str = typer.Option(
        None, "--notify-on", help="What its webhooks hear of: start,end,fail,time-limit-80."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Change what a waiting job waits for; it keeps its id, note, place and submitter.

    The options of submit change what it asks for, checked as at submit (an event
    records each value before and after). A running job can change only --priority
    --name --note --tag --notify-on."""
    drop, add = ids(drop_after, "--drop-after"), ids(add_after, "--add-after")
    given: dict[str, Any] = {
        "node": node,
        "vram_mb": None if vram is None else size(vram, "--vram"),
        "gpus": gpus,
        "memory_mb": None if memory is None else size(memory, "--memory"),
        "cuda": cuda,
        "image": image,
        "timeout": duration(timeout, "--timeout"),
        "priority": priority,
        "name": name,
        "note": note,
        "tags": tag or None,
        "env": env_pairs(env) if env else None,
        "lane": lane,
        "command": command,
        "signal": signal,
        "preemptible": preemptible,
        "reservation": reservation,
        "notify_on": _notify_on(notify_on),
    }
    changes = {k: v for k, v in given.items() if v is not None}
    if not drop and not add and not changes:
        raise CliError("nothing to change: give --drop-after/--add-after or what to change", 2)
    client = Client()
    job = client.edit(job_id, drop_after=drop, add_after=add) if drop or add else None
    if changes:
        job = client.edit_job(job_id, changes)
        from nvq.domain.validate import flag_of  # the validator: only an edit needs it

        flags = ", ".join(flag_of(k) or "--command" for k in changes)
        emit(job, as_json, f"job {job.id} {job.state}, changed {flags}")
        return 0
    assert job is not None
    waits = ",".join(map(str, job.after)) or "nothing"
    emit(job, as_json, f"job {job.id} {job.state}, waiting for {waits}")
    return 0


@on_job.command("move")
def job_move(
    job_id: int = typer.Argument(..., help="A waiting or running job."),
    to: str = typer.Argument(
        ..., metavar="NODE[:GPU]", help="NODE (prefix), or NODE:GPU for one card."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Run a job on another node or card.

    A waiting job is pinned there and keeps its place. A running one is stopped (its
    --signal or TERM, then KILL after the grace), its artifacts are synced as on any
    reassignment, and it runs there as a new attempt. NODE:GPU puts it at the tail of that card's lane."""
    job = Client().move(job_id, to)
    if job.stopped is not None:
        text = f"job {job.id}: {job.stopped} stopped; it runs on {job.to} as a new attempt"
    else:
        text = f"job {job.id} {job.state}, moved to {job.to}"
    emit(job, as_json, text)
    return 0


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
    emit(jobs, as_json, text)
    return 0


@on_job.command("pause")
def job_pause(
    job_ids: list[int] = typer.Argument(..., help="Job ids (array ids with --array)."),
    array: bool = typer.Option(False, "--array", help="Pause the arrays' waiting members."),
    as_json: bool = JsonOpt,
) -> int:
    """Keep jobs queued but unassigned; a running one is stopped and comes back paused."""
    jobs = Client().pause(job_ids, array=array)
    emit(jobs, as_json, lines(jobs, "paused"))
    return 0


@on_job.command("resume")
def job_resume(
    job_ids: list[int] = typer.Argument(..., help="Paused job ids (array ids with --array)."),
    array: bool = typer.Option(False, "--array", help="Resume the arrays' paused members."),
    as_json: bool = JsonOpt,
) -> int:
    """Put paused jobs back in line where they were."""
    jobs = Client().resume(job_ids, array=array)
    emit(jobs, as_json, lines(jobs, "back in line"))
    return 0


def _notify_on(text: str | None) -> list[str] | None:
    if text is None:
        return None
    from nvq.domain.notify_on import parse_notify_on

    try:
        return parse_notify_on(text)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
