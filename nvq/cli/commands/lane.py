"""`nvq queue lanes|lane`: each GPU's ordered serial queue."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.render.ops import lane_line
from nvq.cli.render.output import emit
from nvq.client import Client

on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands


@on_queue.command("lanes")
def queue_lanes(as_json: bool = JsonOpt) -> int:
    """Every GPU's lane: what it runs now, what is next, paused or blocked."""
    docs = Client().lanes()
    emit(docs, as_json, "\n".join(lane_line(d) for d in docs) or "(no GPUs)")
    return 0


@on_queue.command("lane")
def queue_lane(
    lane: str = typer.Argument(..., help="NODE:GPU (node prefix)."),
    action: str = typer.Argument(None, help="move, swap, skip, assign, pause or resume."),
    job_ids: list[int] = typer.Argument(None, help="Job ids the action takes."),
    to: str = typer.Option(None, "--to", help="move: head or a 1-based position."),
    before: int = typer.Option(None, "--before", help="move: before this job."),
    at: str = typer.Option(None, "--at", help="assign: head or a 1-based position."),
    as_json: bool = JsonOpt,
) -> int:
    """One lane's queue in running order, or reorder / pause / resume it."""
    doc = Client().lane(lane, action, job_ids or [], to=to, before=before, at=at)
    lines = [lane_line(doc)]
    lines += [f"  {j['position']}. job {j['id']} {j['state']} {j['name']}" for j in doc.jobs]
    emit(doc, as_json, "\n".join(lines))
    return 0
