"""`nvq queue [status|nodes|drain|resume|ignore|unignore|events]`: the queue as a whole;
bare, the terminal UI."""

from __future__ import annotations

import sys
from typing import Literal

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.control.requests import Subscribe
from nvq.domain.event_classes import CLASSES
from nvq.home import default_root

KIND_WORDS = ", ".join(CLASSES)

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
    job: list[int] = typer.Option(
        None, "--job", help="Only this job's events (--follow: repeat it for several jobs)."
    ),
    follow: bool = typer.Option(
        False, "-f", "--follow", help="Then print each new event as it happens, until Ctrl-C."
    ),
    mine: bool = typer.Option(False, "--mine", help="--follow: only your own jobs' events."),
    user: str = typer.Option(
        None, "--submitter", "--user", help="--follow: only this user's jobs' events."
    ),
    kind: list[str] = typer.Option(
        None, "--kind", help=f"--follow: only events of this kind (repeatable): {KIND_WORDS}."
    ),
    until_done: bool = typer.Option(
        False, "--until-done",
        help="--follow: exit 0 once every --job has ended (each end line printed first).",
    ),
    as_json: bool = JsonOpt,
) -> int:
    """The event log, for catching up on what happened.

    With --follow --json: one compact JSON object a line per event, as it happens; a
    job's end line says how it ended (state, exit code, reason, result, stderr tail).
    An agent waits for its jobs with:

    \b
      nvq queue events --follow --json --job N --kind end --until-done"""
    jobs = tuple(job or ())
    if follow:
        from nvq.cli.event_follow import follow as follow_stream

        request = Subscribe(
            jobs=jobs, user=user, mine=mine, classes=tuple(kind or ()), detail=True
        )
        return follow_stream(since, request, as_json=as_json, until_done=until_done)
    if mine or user is not None or kind or until_done or len(jobs) > 1:
        from nvq.cli.failure import fail

        fail("--mine, --submitter, --kind, --until-done and several --job need --follow",
             2, as_json)
    return reads.queue_events(as_json, since=since, limit=limit, job=jobs[0] if jobs else None)
