"""Machines that come and go: `queue busy`, `queue forbid-busy-assign`,
`queue allow-busy-assign`, and the artifacts a reassigned job takes along
(`job artifacts`)."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.client import Client

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands
on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands


@on_queue.command("busy")
def queue_busy(
    node: str = typer.Argument(..., help="Node name (or unique prefix)."),
    mode: str = typer.Argument(None, help="on, off or auto (the owner's logins decide)."),
    as_json: bool = JsonOpt,
) -> int:
    """Show or set whether a node counts as busy (its owner is using it)."""
    if mode is not None and mode not in ("on", "off", "auto"):
        raise CliError(f"busy mode {mode!r}: expected on, off or auto", 2)
    doc = Client().busy(node, mode)
    state = "busy" if doc.busy else "idle"
    emit(doc, as_json, f"node {doc.node}: {state} (mode {doc.mode}, owner {doc.owner})")
    return 0


@on_queue.command("forbid-busy-assign")
def queue_forbid_busy_assign(as_json: bool = JsonOpt) -> int:
    """Keep your own jobs off your nodes while you are using them."""
    doc = Client().busy_assign(forbid=True)
    emit(doc, as_json, f"{doc.user}: your jobs no longer go to your busy nodes")
    return 0


@on_queue.command("allow-busy-assign")
def queue_allow_busy_assign(as_json: bool = JsonOpt) -> int:
    """Let your own jobs use your busy nodes again (when no idle node fits)."""
    doc = Client().busy_assign(forbid=False)
    emit(doc, as_json, f"{doc.user}: your jobs may use your busy nodes again")
    return 0
