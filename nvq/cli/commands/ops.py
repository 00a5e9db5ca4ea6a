"""Operating the queue: `queue alerts|ack|backup|check|restore` and `project test`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from nvq import control as c
from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.ops import check_text
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.control.plain import listed
from nvq.home import default_root

on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands
on_project = typer.Typer()  # attached to the `project` group in nvq.cli.commands


@on_queue.command("alerts")
def queue_alerts(
    detail: bool = typer.Option(False, "--detail", help="With each failure's output tail."),
    show_all: bool = typer.Option(False, "--all", help="Acknowledged ones too."),
    as_json: bool = JsonOpt,
) -> int:
    """What needs attention; exits 1 while any alert is unacknowledged."""
    return reads.queue_alerts(as_json, detail=detail, show_all=show_all)


@on_queue.command("ack")
def queue_ack(
    alert_ids: list[int] = typer.Argument(None, help="Alert ids."),
    ack_all: bool = typer.Option(False, "--all", help="Every open alert."),
    as_json: bool = JsonOpt,
) -> int:
    """Acknowledge alerts once they are understood (or fixed)."""
    if bool(alert_ids) == ack_all:
        raise CliError("give alert ids or --all", 2)
    acked = Client().ack(None if ack_all else alert_ids)
    emit(listed(c.Ack, acked), as_json, f"acknowledged {len(acked)} alert{'s' * (len(acked) != 1)}")
    return 0


@on_queue.command("backup")
def queue_backup(
    path: str = typer.Argument(None, help="File (or directory) to write; never overwritten."),
    as_json: bool = JsonOpt,
) -> int:
    """A consistent snapshot of queue.db, taken by the running daemon."""
    target = str(Path(path).expanduser().absolute()) if path else None
    doc = Client().backup(target)
    emit(
        doc,
        as_json,
        f"backup {doc.path}: {doc.jobs} jobs, {doc.bytes} bytes, checked, {doc.seconds}s",
    )
    return 0


@on_queue.command("check")
def queue_check(as_json: bool = JsonOpt) -> int:
    """Check queue.db: SQLite's integrity check, and every job the nodes know is in it.
    Exits 1 when anything is wrong."""
    from nvq import control as c
    from nvq.client.errors import DaemonUnavailable
    from nvq.home import Home
    from nvq.store.integrity import integrity_of_file

    try:
        report = Client().check()
    except DaemonUnavailable as exc:
        # No daemon (it cannot even start on a damaged file): the file alone, read-only.
        print(f"nvq: {exc}; checking queue.db alone", file=sys.stderr)
        report = c.StoreCheck(integrity=integrity_of_file(Home(default_root()).db), nodes={})
    emit(report, as_json, check_text(report))
    wrong = report.integrity != "ok" or any(
        n.missing or n.lost_events for n in report.nodes.values()
    )
    return 1 if wrong else 0


@on_queue.command("restore")
def queue_restore(
    path: Path = typer.Argument(..., help="A backup made by `nvq queue backup`."),
    as_json: bool = JsonOpt,
) -> int:
    """Put a backup in place of queue.db (the daemon must be stopped).

    With a keeper installed and up, its restarts are paused for the restore: the
    daemon is stopped here, and the keeper starts it again on the restored queue."""
    from nvq import keeper
    from nvq.backup import BackupError, restore

    root = default_root()
    try:
        with keeper.paused(root) as kept:
            if kept is not None:
                stop_daemon_for_restore(root)
            doc = restore(root, path)
    except (BackupError, keeper.KeeperError) as exc:
        raise CliError(str(exc)) from None
    text = f"restored {doc['restored']} ({doc['jobs']} jobs)"
    if doc["replaced"]:
        text += f"; the previous database is kept as {doc['replaced']}"
    if kept is not None:
        doc["keeper"] = kept["kind"]
        text += f"; the keeper ({kept['kind']}) was paused for it and starts the daemon again"
    emit(doc, as_json, text)
    return 0


def stop_daemon_for_restore(root: Path) -> None:
    """Stop the daemon the keeper keeps (the keeper is paused, so it stays stopped)."""
    from nvq.cli.daemon_exit import wait_gone
    from nvq.client import DaemonUnavailable
    from nvq.home import Home

    pid = Home(root).read_pid()
    try:
        Client(root, autostart=False).stop_daemon(planned=False)
    except DaemonUnavailable:
        return
    wait_gone(pid)


