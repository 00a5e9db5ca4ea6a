"""`nvq daemon [stop]`: the daemon in the foreground, and stopping it cleanly."""

from __future__ import annotations

import os
import time

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.render.output import emit
from nvq.client import Client, DaemonUnavailable
from nvq.home import Home, default_root

on_daemon = typer.Typer()  # attached to the `daemon` group in nvq.cli.commands


@on_daemon.callback()
def daemon_main(ctx: typer.Context) -> int:
    """Run the daemon in the foreground (it is started for you when needed)."""
    if ctx.invoked_subcommand is not None:
        return 0
    from nvq.daemon.main import run

    return run(default_root(), foreground=True)


@on_daemon.command("stop")
def daemon_stop(as_json: bool = JsonOpt) -> int:
    """Stop the daemon cleanly; jobs keep running on their nodes."""
    pid = Home(default_root()).read_pid()
    try:
        Client(autostart=False).stop_daemon()
    except DaemonUnavailable:
        emit({"stopped": False, "running": False}, as_json, "no daemon is running")
        return 0
    deadline = time.monotonic() + 20
    while pid is not None and time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    emit({"stopped": True, "pid": pid}, as_json, f"daemon {pid} stopped")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
