"""`nvq job ls|show|why|logs|wait|cancel|release|note|result`: reading and managing jobs
one request each (submit, the policy commands and artifacts have their own modules)."""

from __future__ import annotations

import sys

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError, duration, ended_before
from nvq.cli.render.jobs import outcome
from nvq.cli.render.output import emit
from nvq.cli.render.results import result_text
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("ls")
def job_ls(
    active: bool = typer.Option(False, "--active", help="Live jobs only (pending, held, paused, running)."),
    held: bool = typer.Option(False, "--held", help="Held jobs only."),
    state: list[str] = typer.Option([], "--state", help="Only jobs in this state (repeatable)."),
    limit: int = typer.Option(None, "--limit", help="The newest N jobs."),
    array: int = typer.Option(None, "--array", help="Members of this array."),
    every: bool = typer.Option(False, "--all", help="Every job, however many finished."),
    since: str = typer.Option(
        None, "--since", help="Job ID and later, or submitted since a DATE or an age (2h)."
    ),
    user: str = typer.Option(None, "--user", help="Only this user's jobs."),
    mine: bool = typer.Option(False, "--mine", help="Only your own jobs."),
    tag: str = typer.Option(None, "--tag", help="Only jobs with this tag."),
    as_json: bool = JsonOpt,
) -> int:
    """List jobs: the live ones and the newest 50 finished.

    --limit N shows the newest N jobs, --all every one; the filters narrow either.
    When jobs were left out the list says so. --json: always {"jobs": [...], "more": bool}."""
    from nvq.cli.job_window import window_request

    window = window_request(states=state, held=held, user=user, mine=mine, tag=tag, array=array,
                            since=since, limit=limit, every=every, active=active)
    return reads.job_window(window, as_json)


@on_job.command("show")
def job_show(
    job_id: int = typer.Argument(..., help="Job id."),
    logs: int = typer.Option(0, "--logs", help="Include the last N lines of its output."),
    env: bool = typer.Option(
        False, "--env", help="List its environment (secrets hidden), not only count it."
    ),
    reveal: bool = typer.Option(
        False, "--reveal", help="With --json: show secret-looking variables' values."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """One job in full, with its events."""
    return reads.job_show(job_id, as_json, logs=logs, env=env, reveal=reveal)


@on_job.command("wait")
def job_wait(
    job_ids: list[int] = typer.Argument(None, help="Job ids."),
    timeout: str = typer.Option(None, "--timeout", help="Give up after this long (exit 2)."),
    array: int = typer.Option(None, "--array", help="Every member of this array."),
    as_json: bool = JsonOpt,
) -> int:
    """Block until jobs end: exit 0 all completed, 1 one ended badly, 2 timed out waiting.

    Exit 1 as soon as the wait is over and any job ended badly, even while others
    still run (--json: `still_going` lists them); 2 only when none ended badly and
    --timeout ran out."""
    client = Client()
    if array is not None:
        from nvq.cli.sweeps import members

        job_ids = [*(job_ids or []), *(j.id for j in members(client, array))]
    if not job_ids:
        raise CliError("give job ids, or --array ID", 2)
    done = client.wait(job_ids, timeout=duration(timeout, "--timeout"))
    text = "\n".join(outcome(j) for j in done.jobs)
    if done.still_going:
        going = ", ".join(map(str, done.still_going))
        why = "" if done.exit_code == 1 else "; --timeout ran out"
        text += f"\n(still going: {going}{why})"
    emit(done, as_json, text)
    return done.exit_code


@on_job.command("note")
def job_note(
    job_id: int = typer.Argument(..., help="Job id."),
    text: str = typer.Argument(None, help="Replace the note with this."),
    append: str = typer.Option(None, "--append", help="Add a line to the note."),
    clear: bool = typer.Option(False, "--clear", help="Remove the note."),
    as_json: bool = JsonOpt,
) -> int:
    """Read or change a job's note."""
    if (text is not None) + (append is not None) + clear > 1:
        raise CliError("give one of TEXT, --append or --clear", 2)
    job = Client().note(job_id, text, append=append, clear=clear)
    emit(job, as_json, job.note or "(no note)")
    return 0


@on_job.command("result")
def job_result(
    job_ids: list[int] = typer.Argument(None, help="Job ids."),
    set_json: str = typer.Option(None, "--set", help="Store this JSON as the result."),
    array: int = typer.Option(
        None, "--array", help="Every member's index, parameters, state and result."
    ),
    as_csv: bool = typer.Option(False, "--csv", help="With --array: one CSV line a member."),
    as_json: bool = JsonOpt,
) -> int:
    """Jobs' result.json payloads (or set one's).

    Several ids: one line each (ID, then the result). With --array, every member's,
    as one table (--json, or --csv for a spreadsheet)."""
    if array is not None or as_csv:
        if job_ids and len(job_ids) > 1:
            raise CliError("--array ID takes no job id and no --set; --csv needs --array", 2)
        return _array_results(
            job_ids[0] if job_ids else None, array, set_json=set_json, as_csv=as_csv,
            as_json=as_json,
        )
    if not job_ids:
        raise CliError("give a job id, or --array ID", 2)
    if set_json is not None and len(job_ids) > 1:
        raise CliError("--set stores one job's result: give one id", 2)
    if len(job_ids) == 1 and set_json is None:
        return reads.job_result(job_ids[0], as_json)
    client = Client()
    if len(job_ids) == 1:
        (job_id,) = job_ids
        value = client.result(job_id, set_json=set_json)
        emit({"id": job_id, "result": value}, as_json, result_text(value))
        return 0
    docs = [{"id": job_id, "result": client.result(job_id)} for job_id in job_ids]
    text = "\n".join(f"{d['id']}\t{result_text(d['result'])}" for d in docs)
    emit({"results": docs}, as_json, text)
    return 0


def _array_results(
    job_id: int | None, array: int | None, *, set_json: str | None, as_csv: bool, as_json: bool
) -> int:
    from nvq.cli.sweeps import results, results_csv

    if array is None or job_id is not None or set_json is not None:
        raise CliError("--array ID takes no job id and no --set; --csv needs --array", 2)
    if as_csv and as_json:
        raise CliError("give --csv or --json, not both", 2)
    rows = results(Client(), array)
    if as_csv:
        print(results_csv(rows))
        return 0
    text = "\n".join(
        f"{r.id}\t[{r.index}]\t{r.state}\t{result_text(r.result)}" for r in rows
    )
    from nvq.cli.json_shapes import ArrayResults

    emit(ArrayResults(array=array, members=rows), as_json, text)
    return 0


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
        from nvq.cli.json_shapes import PurgePreview

        preview = PurgePreview(would_purge=len(found.ids), ids=found.ids)
        emit(preview, as_json, purge_plan(found.ids))
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
