"""`nvq queue lanes|lane`: each GPU's ordered serial queue."""

from __future__ import annotations

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.render.ops import lane_detail
from nvq.cli.render.output import emit
from nvq.client import Client

on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands


@on_queue.command("lanes")
def queue_lanes(as_json: bool = JsonOpt) -> int:
    """Every GPU's lane: what it runs now, what is next, paused or blocked."""
    return reads.queue_lanes(as_json)


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
    """One lane's queue in running order, or reorder / pause / resume it.

    \b
    Actions (none: show the lane):
      move ID --to head|N      put a waiting job at the head or at position N
      move ID --before ID2     put it just before job ID2
      swap ID1 ID2             exchange two waiting jobs' places
      skip                     send the next job to the back
      assign ID [--at head|N]  move a pending job into this lane
      pause                    finish the running job, start nothing new
      resume                   start its jobs again
    Example: nvq queue lane gpu1:0 move 42 --to head"""
    if action is None and not job_ids and to is None and before is None and at is None:
        return reads.queue_lane(lane, as_json)
    doc = Client().lane(lane, action, job_ids or [], to=to, before=before, at=at)
    emit(doc, as_json, lane_detail(doc))
    return 0
