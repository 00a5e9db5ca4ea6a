"""`nvq job ls|show|logs|wait|cancel|release|note|result`: reading and managing jobs
one request each (submit, the policy commands and artifacts have their own modules)."""

from __future__ import annotations

import sys
from typing import Literal

import msgspec
import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError, duration
from nvq.cli.render.jobs import job_detail, jobs_table, outcome
from nvq.cli.render.output import emit
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("ls")
def job_ls(
    active: bool = typer.Option(False, "--active", help="Pending and running only."),
    held: bool = typer.Option(False, "--held", help="Held jobs only."),
    state: list[str] = typer.Option([], "--state", help="Only jobs in this state (repeatable)."),
    limit: int = typer.Option(None, "--limit", help="The newest N jobs."),
    array: int = typer.Option(None, "--array", help="Members of this array."),
    as_json: bool = JsonOpt,
) -> int:
    """List jobs."""
    states = [*state, "held"] if held else state
    jobs = Client().jobs(active=active, states=states or None, limit=limit, array=array)
    emit(jobs, as_json, jobs_table(jobs))
    return 0


@on_job.command("show")
def job_show(
    job_id: int = typer.Argument(..., help="Job id."),
    logs: int = typer.Option(0, "--logs", help="Include the last N lines of its output."),
    reveal: bool = typer.Option(
        False, "--reveal", help="With --json: show secret-looking variables' values."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """One job in full, with its events."""
    doc = Client().show(job_id, logs=logs)
    emit(doc, as_json, job_detail(doc), reveal=reveal)
    return 0


@on_job.command("logs")
def job_logs(
    job_id: int = typer.Argument(..., help="Job id."),
    lines: int = typer.Option(50, "-n", "--lines", help="Last N lines (-1 for all)."),
    follow: bool = typer.Option(False, "-f", "--follow", help="Keep printing until it ends."),
    stderr: bool = typer.Option(False, "--stderr", help="Its stderr instead of stdout."),
    setup: bool = typer.Option(False, "--setup", help="What its --setup printed."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's output."""
    if stderr and setup:
        raise CliError("give --stderr or --setup, not both", 2)
    stream: Literal["stdout", "stderr", "setup"] = (
        "setup" if setup else "stderr" if stderr else "stdout"
    )
    chunks = Client().logs(job_id, lines=lines, follow=follow, stream=stream)
    if as_json:
        text = b"".join(chunks).decode(errors="replace")
        emit({"id": job_id, "stream": stream, "text": text}, True)
        return 0
    for data in chunks:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


@on_job.command("wait")
def job_wait(
    job_ids: list[int] = typer.Argument(..., help="Job ids."),
    timeout: str = typer.Option(None, "--timeout", help="Give up after this long (exit 2)."),
    as_json: bool = JsonOpt,
) -> int:
    """Block until jobs end: exit 0 all completed, 1 one ended badly, 2 timed out waiting."""
    done = Client().wait(job_ids, timeout=duration(timeout, "--timeout"))
    text = "\n".join(outcome(j) for j in done.jobs)
    if done.exit_code == 2:
        text += "\n(still going: --timeout ran out)"
    emit(done, as_json, text)
    return done.exit_code


@on_job.command("cancel")
def job_cancel(
    job_ids: list[int] = typer.Argument(..., help="Job ids."),
    array: bool = typer.Option(
        False, "--array", help="The ids are arrays: cancel members not yet running."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """Cancel jobs; a running one's process group is killed."""
    jobs = Client().cancel(job_ids, array=array)
    emit(jobs, as_json, "\n".join(f"job {j.id} cancelled" for j in jobs))
    return 0


@on_job.command("release")
def job_release(
    job_ids: list[int] = typer.Argument(..., help="Held job ids."),
    as_json: bool = JsonOpt,
) -> int:
    """Run held jobs without the prerequisites that ended badly."""
    jobs = Client().release(job_ids)
    emit(jobs, as_json, "\n".join(f"job {j.id} released" for j in jobs))
    return 0


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
    job_id: int = typer.Argument(..., help="Job id."),
    set_json: str = typer.Option(None, "--set", help="Store this JSON as the result."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's result.json payload (or set one)."""
    value = Client().result(job_id, set_json=set_json)
    if as_json:
        emit({"id": job_id, "result": value}, True)
    else:
        print(msgspec.json.encode(value).decode() if value is not None else "(no result)")
    return 0
