"""`nvq queue [status|nodes|drain|resume|ignore|unignore|events]`: the queue as a whole;
bare, the terminal UI."""

from __future__ import annotations

import sys
from typing import Literal

import msgspec
import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.cli.render.queue import event_line
from nvq.client import Client
from nvq.home import default_root

on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands


@on_queue.callback()
def queue_main(ctx: typer.Context) -> int:
    """Open the terminal UI: nodes, jobs, logs and events, live."""
    if ctx.invoked_subcommand is not None:
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # a script or a pipe gets what a bare group always printed, not a screen
        print(ctx.get_help())
        return 2
    from nvq.tui import run  # Textual loads only when the UI opens

    return run(default_root())


@on_queue.command("status")
def queue_status(as_json: bool = JsonOpt) -> int:
    """Nodes, GPUs, job counts and active jobs."""
    return reads.queue_status(as_json)


@on_queue.command("nodes")
def queue_nodes(
    procs: bool = typer.Option(False, "--procs", help="Every process on every GPU."),
    include_ignored: bool = typer.Option(False, "--include-ignored", help="Ignored nodes too."),
    as_json: bool = JsonOpt,
) -> int:
    """Every GPU of every node: memory, utilisation, the queue's share, processes."""
    return reads.queue_nodes(as_json, procs=procs, include_ignored=include_ignored)


def _node_flag(
    node: str, flag: Literal["drained", "ignored"], value: bool, as_json: bool, said: str
) -> int:
    view = Client().node_flag(node, flag, value)
    card = node.rpartition(":")[2] if ":" in node else None
    emit(view, as_json, f"card {view.name}:{card} {said}" if card else f"node {view.name} {said}")
    return 0


@on_queue.command("drain")
def queue_drain(
    node: str = typer.Argument(..., help="Node name (prefix), or one card: NODE:IDX."),
    as_json: bool = JsonOpt,
) -> int:
    """Place nothing new on a node (or one card, NODE:IDX); its running jobs finish."""
    return _node_flag(node, "drained", True, as_json, "draining")


@on_queue.command("resume")
def queue_resume(
    node: str = typer.Argument(..., help="Node name (prefix), or one card: NODE:IDX."),
    as_json: bool = JsonOpt,
) -> int:
    """Undo drain; NODE:IDX returns a drained or unhealthy card (its evidence acknowledged)."""
    return _node_flag(node, "drained", False, as_json, "accepting jobs")


@on_queue.command("ignore")
def queue_ignore(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Stop probing and scheduling a node and hide it (refused while it runs jobs)."""
    return _node_flag(node, "ignored", True, as_json, "ignored")


@on_queue.command("unignore")
def queue_unignore(
    node: str = typer.Argument(..., help="Node name (prefix)."), as_json: bool = JsonOpt
) -> int:
    """Undo ignore."""
    return _node_flag(node, "ignored", False, as_json, "back")


@on_queue.command("events")
def queue_events(
    since: int = typer.Option(0, "--since", help="Events after this id."),
    limit: int = typer.Option(None, "--limit", help="At most N events."),
    job: int = typer.Option(None, "--job", help="Only this job's events."),
    follow: bool = typer.Option(
        False, "-f", "--follow", help="Then print each new event as it happens, until Ctrl-C."
    ),
    as_json: bool = JsonOpt,
) -> int:
    """The event log, for catching up on what happened."""
    if follow:
        # One line (with --json: one JSON document) per event, as each is committed,
        # in the columns `queue events` prints.
        if not as_json:
            from nvq.cli.render.events import HEADER

            print(HEADER, flush=True)
        # Only watching: it starts no daemon stopped on purpose (nvq.client.stop_mark).
        for event in Client(observing=True).subscribe(since, job=job):
            line = msgspec.json.encode(event).decode() if as_json else event_line(event)
            print(line, flush=True)
        return 0
    return reads.queue_events(as_json, since=since, limit=limit, job=job)
