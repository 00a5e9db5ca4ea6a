"""`nvq queue keeper install|status|logs|stop`."""

from __future__ import annotations

import typer

from nvq.cli.client import CliError, nvq_home
from nvq.cli.output import emit as _emit

keeper_app = typer.Typer(
    help="Keep the daemon running (a supervisor or systemd).", no_args_is_help=True
)
JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")




@keeper_app.command("install")
def keeper_install(
    start: bool = typer.Option(False, "--start", help="Start it now."),
    systemd: bool = typer.Option(False, "--systemd", help="A systemd user service instead."),
    as_json: bool = JsonOpt,
) -> int:
    """Install a keeper that restarts the daemon whenever it exits."""
    from nvq.keeper import KeeperError, install

    try:
        doc = install(nvq_home(), systemd=systemd, start=start)
    except KeeperError as exc:
        raise CliError(str(exc)) from None
    text = f"keeper installed ({doc['kind']})"
    if doc.get("pid"):
        text += f", running as pid {doc['pid']}"
    if doc.get("unit_path"):
        text += f"; unit {doc['unit_path']}"
    if doc.get("note"):
        text += f"\n{doc['note']}"
    _emit(doc, as_json, text)
    return 0


@keeper_app.command("status")
def keeper_status(as_json: bool = JsonOpt) -> int:
    """Exits 1 while nothing keeps the daemon running."""
    from nvq.keeper import state

    doc = state(nvq_home()) or {"kind": None, "up": False, "pid": None}
    if doc["kind"] is None:
        text = "no keeper installed (nvq queue keeper install --start)"
    else:
        text = f"keeper {'up' if doc['up'] else 'DOWN'} ({doc['kind']}" + (
            f", pid {doc['pid']})" if doc.get("pid") else ")"
        )
    _emit(doc, as_json, text)
    return 0 if doc["up"] else 1


@keeper_app.command("logs")
def keeper_logs(
    lines: int = typer.Option(50, "-n", "--lines", help="Last N lines (0 for all)."),
    as_json: bool = JsonOpt,
) -> int:
    """The keeper's own log (restarts and why)."""
    from nvq.keeper import tail_log

    text = tail_log(nvq_home(), lines)
    _emit({"text": text}, as_json, text)
    return 0


@keeper_app.command("stop")
def keeper_stop(as_json: bool = JsonOpt) -> int:
    """Stop the keeper; the daemon keeps running until `nvq daemon stop`."""
    from nvq.keeper import stop

    doc = stop(nvq_home())
    _emit(doc, as_json, "keeper stopped" if doc["stopped"] else "no keeper was running")
    return 0
