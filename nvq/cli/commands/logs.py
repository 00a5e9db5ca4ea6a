"""`nvq job logs ID`: a job's output."""

from __future__ import annotations

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("logs")
def job_logs(
    job_id: int = typer.Argument(..., help="Job id."),
    lines: int = typer.Option(50, "-n", "--lines", help="Last N lines (-1 for all)."),
    follow: bool = typer.Option(False, "-f", "--follow", help="Keep printing until it ends."),
    stdout: bool = typer.Option(False, "--stdout", help="Only its stdout."),
    stderr: bool = typer.Option(False, "--stderr", help="Only its stderr."),
    streams: bool = typer.Option(
        False, "--streams", help="Mark each line with its stream (out| , err| )."
    ),
    attempt: int = typer.Option(
        None, "--attempt", help="Output of attempt N (see `job show`); default: the latest."
    ),
    setup: bool = typer.Option(False, "--setup", help="What its --setup printed."),
    raw: bool = typer.Option(
        False, "--raw", help="Pass its control sequences to the terminal as they are."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """A job's output, stdout and stderr in the order written.

    The queue host keeps a copy of every attempt's output: it reads while the node
    is down or gone. To a terminal, its control sequences are shown (as ^[), not
    obeyed; --raw passes them."""
    return reads.job_logs(
        job_id, as_json, lines=lines, follow=follow, stdout=stdout, stderr=stderr, setup=setup,
        streams=streams, raw=raw, attempt=attempt,
    )
