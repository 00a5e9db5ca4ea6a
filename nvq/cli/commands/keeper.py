"""`nvq queue keeper install|status|logs|stop`: what restarts the daemon when it exits."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.home import default_root

on_keeper = typer.Typer()  # attached to the `keeper` group in nvq.cli.commands


def owner_only(root: Path, action: str) -> None:
    """The keeper restarts the daemon as its owner: only the owner of the queue's home
    may install or stop it (a member is refused before anything is written)."""
    try:
        owner_uid = root.stat().st_uid
    except FileNotFoundError:
        return  # a queue not made yet: this user's own
    except OSError as exc:
        raise CliError(f"cannot reach the queue's home {root}: {exc.strerror}") from None
    if owner_uid != os.geteuid():
        try:
            owner = pwd.getpwuid(owner_uid).pw_name
        except KeyError:
            owner = str(owner_uid)
        raise CliError(f"only the queue's owner ({owner}) may {action}")


@on_keeper.command("install")
def keeper_install(
    start: bool = typer.Option(False, "--start", help="Start it now."),
    systemd: bool = typer.Option(False, "--systemd", help="A systemd user service instead."),
    as_json: bool = JsonOpt,
) -> int:
    """Install a keeper that restarts the daemon whenever it exits.

    Except after `nvq daemon stop`: that stop stays until `nvq daemon start`."""
    from nvq.client import stop_mark
    from nvq.keeper import KeeperError, install

    root = default_root()
    owner_only(root, "install its keeper")
    was = stop_mark.clear(root) if start else None  # --start: it is meant to run
    try:
        doc = install(root, systemd=systemd, start=start)
    except KeeperError as exc:
        raise CliError(str(exc)) from None
    text = f"keeper installed ({doc['kind']})"
    if doc.get("pid"):
        text += f", running as pid {doc['pid']}"
    if was:
        text += f" (the daemon was {was})"
    if doc.get("unit_path"):
        text += f"; unit {doc['unit_path']}"
    if doc.get("note"):
        text += f"\n{doc['note']}"
    emit(doc, as_json, text)
    return 0


@on_keeper.command("status")
def keeper_status(as_json: bool = JsonOpt) -> int:
    """Exits 1 while nothing keeps the daemon running."""
    from nvq.keeper import state

    doc = state(default_root()) or {"kind": None, "up": False, "pid": None}
    if doc["kind"] is None:
        text = "no keeper installed (nvq queue keeper install --start)"
    else:
        text = f"keeper {'up' if doc['up'] else 'DOWN'} ({doc['kind']}" + (
            f", pid {doc['pid']})" if doc.get("pid") else ")"
        )
    emit(doc, as_json, text)
    return 0 if doc["up"] else 1


@on_keeper.command("logs")
def keeper_logs(
    lines: int = typer.Option(50, "-n", "--lines", help="Last N lines (0 for all)."),
    as_json: bool = JsonOpt,
) -> int:
    """The keeper's own log (restarts and why)."""
    from nvq.keeper import tail_log

    text = tail_log(default_root(), lines)
    emit({"text": text}, as_json, text)
    return 0


@on_keeper.command("stop")
def keeper_stop(as_json: bool = JsonOpt) -> int:
    """Stop the keeper; the daemon keeps running until `nvq daemon stop`."""
    from nvq.keeper import stop

    owner_only(default_root(), "stop its keeper")
    doc = stop(default_root())
    emit(doc, as_json, "keeper stopped" if doc["stopped"] else "no keeper was running")
    return 0
