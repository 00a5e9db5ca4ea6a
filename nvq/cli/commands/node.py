"""`nvq node bootstrap`: installing the runner on a node."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.client import Client

on_node = typer.Typer()  # attached to the `node` group in nvq.cli.commands


@on_node.command("bootstrap")
def node_bootstrap(
    node: str = typer.Argument(..., help="Node name (prefix)."),
    force: bool = typer.Option(False, "--force", help="Reinstall even when current."),
    as_json: bool = JsonOpt,
) -> int:
    """Install this version of the runner on a node (a venv under its home), over SFTP."""
    doc = Client().bootstrap(node, force=force)
    said = "installed" if doc.installed else "already current"
    text = f"node {doc.node}: runner {doc.version} {said} ({doc.python}, {doc.seconds}s)"
    if doc.note:
        text += f"\n{doc.note}"
    emit(doc, as_json, text)
    return 0
