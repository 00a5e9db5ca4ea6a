"""`nvq job move ID NODE[:GPU]`: run a job on another node or card."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


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
