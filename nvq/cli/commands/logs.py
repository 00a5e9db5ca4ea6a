"""`nvq job logs ID`: a job's output."""

from __future__ import annotations

from typing import Literal

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError

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
    if stdout + stderr + setup > 1:
        raise CliError("give one of --stdout, --stderr, --setup", 2)
    stream: Literal["stdout", "stderr", "setup", "both"] = (
        "setup" if setup else "stderr" if stderr else "stdout" if stdout else "both"
    )
    from nvq.cli.logs_output import print_logs

    print_logs(
        job_id, lines=lines, follow=follow, stream=stream, attempt=attempt, as_json=as_json,
        marks=streams,
        raw=raw,
    )
    return 0
