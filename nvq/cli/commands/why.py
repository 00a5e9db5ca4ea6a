"""`nvq job why ID`: why a job waits, node by node."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.cli.render.why import why_text
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("why")
def job_why(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = JsonOpt) -> int:
    """Why a job waits, node by node.

    For each node: whether the job could start there now, and if not which constraint
    fails (cards, memory per card, CUDA, host memory, pin, drained, busy, lane, a
    pending kill), with the numbers."""
    report = Client().why(job_id)
    emit(report, as_json, why_text(report))
    return 0
