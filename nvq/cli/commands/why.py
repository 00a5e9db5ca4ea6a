"""`nvq job why ID`: why a job waits, node by node."""

from __future__ import annotations

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("why")
def job_why(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = JsonOpt) -> int:
    """Why a job waits, node by node.

    For each node: whether the job could start there now, and if not which constraint
    fails (cards, memory per card, CUDA, host memory, pin, drained, busy, lane, a
    pending kill), with the numbers."""
    return reads.job_why(job_id, as_json)
