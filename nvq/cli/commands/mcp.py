"""`nvq mcp`: the queue as an MCP server over stdio, for coding agents
(`claude mcp add nvq -- nvq mcp`); see nvq.agents.mcp_server."""

from __future__ import annotations

import typer

on_mcp = typer.Typer()  # attached as the `mcp` command in nvq.cli.commands


@on_mcp.command("mcp")
def mcp() -> int:
    """Serve the queue to a coding agent over MCP (stdio): `claude mcp add nvq -- nvq mcp`.

    Every tool returns the document the matching `nvq ... --json` command prints,
    with your rights; read-only, preview and changing tools are annotated as such."""
    # The SDK (and pydantic under it) loads only here: no other command pays for it.
    from nvq.agents.mcp_server import serve

    serve()
    return 0
