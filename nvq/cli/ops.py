"""CLI commands for operating the queue: `queue alerts`, `queue ack`, `queue backup`,
`queue restore`, `queue keeper ...`, `project test`; and the `job submit --manifest`
helpers. `register` adds them to the app built in nvq.cli.main."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer
from click.core import ParameterSource

from nvq import control as c
from nvq.cli.client import CliError, call, nvq_home
from nvq.cli.output import emit as _emit
from nvq.cli.render_ops import alerts_table
from nvq.model import JobSpec

JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")




def read_local(path: Path, flag: str) -> str:
    """A local file's text; `-` reads stdin (a forwarded command gets the file there)."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text()
    except OSError as exc:
        raise CliError(f"{flag} {path}: {exc.strerror}", 2) from None


def _manifest_fields(path: Path, flag: str = "--manifest") -> dict[str, Any]:
    from nvq.manifest import ManifestError, load

    try:
        if str(path) == "-":
            return load(Path("manifest.toml"), sys.stdin.read())
        return load(path)
    except ManifestError as exc:
        raise CliError(str(exc), 2) from None


def with_manifest(spec: JobSpec, path: Path, ctx: typer.Context) -> JobSpec:
    """`job submit --manifest`: the manifest, overridden by every flag given."""
    from nvq.manifest import PARAM_FIELDS, merge

    given = {
        field
        for param, field in PARAM_FIELDS.items()
        if ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE
    }
    return merge(spec, _manifest_fields(path), given)


# ---------------------------------------------------------------- alerts


def queue_alerts(
    detail: bool = typer.Option(False, "--detail", help="With each failure's output tail."),
    show_all: bool = typer.Option(False, "--all", help="Acknowledged ones too."),
    as_json: bool = JsonOpt,
) -> int:
    """What needs attention; exits 1 while any alert is unacknowledged."""
    done = call(c.Alerts(include_acked=show_all))
    shown = done.data
    _emit(shown, as_json, alerts_table(shown, detail) if shown else "no open alerts")
    return done.exit_code


def queue_ack(
    alert_ids: list[int] = typer.Argument(None, help="Alert ids."),
    ack_all: bool = typer.Option(False, "--all", help="Every open alert."),
    as_json: bool = JsonOpt,
) -> int:
    """Acknowledge alerts once they are understood (or fixed)."""
    if bool(alert_ids) == ack_all:
        raise CliError("give alert ids or --all", 2)
    acked = call(c.Ack(ids=None if ack_all else alert_ids)).data
    _emit(acked, as_json, f"acknowledged {len(acked)} alert{'s' * (len(acked) != 1)}")
    return 0


# ---------------------------------------------------------------- backups


def queue_backup(
    path: str = typer.Argument(None, help="File (or directory) to write; never overwritten."),
    as_json: bool = JsonOpt,
) -> int:
    """A consistent snapshot of queue.db, taken by the running daemon."""
    target = str(Path(path).expanduser().absolute()) if path else None
    doc = call(c.Backup(path=target)).data
    _emit(
        doc,
        as_json,
        f"backup {doc['path']}: {doc['jobs']} jobs, {doc['bytes']} bytes, checked, "
        f"{doc['seconds']}s",
    )
    return 0


def queue_restore(
    path: Path = typer.Argument(..., help="A backup made by `nvq queue backup`."),
    as_json: bool = JsonOpt,
) -> int:
    """Put a backup in place of queue.db (the daemon must be stopped)."""
    from nvq.backup import BackupError, restore

    try:
        doc = restore(nvq_home(), path)
    except BackupError as exc:
        raise CliError(str(exc)) from None
    text = f"restored {doc['restored']} ({doc['jobs']} jobs)"
    if doc["replaced"]:
        text += f"; the previous database is kept as {doc['replaced']}"
    _emit(doc, as_json, text)
    return 0


# ---------------------------------------------------------------- project


def project_test(
    manifest: Path = typer.Option(Path("manifest.toml"), "--manifest", help="The manifest."),
    skip_limits: bool = typer.Option(False, "--skip-limits", help="Do not apply its memory limit."),
    as_json: bool = JsonOpt,
) -> int:
    """Run the manifest's job once, here, in the foreground, under its memory limit."""
    from nvq.project import run_test

    fields = _manifest_fields(manifest)
    if not fields.get("command"):
        raise CliError(f"{manifest}: job.command: missing (nothing to run)", 2)
    started = time.monotonic()
    result = run_test(fields, limits=not skip_limits, capture=as_json)
    result["seconds"] = round(time.monotonic() - started, 3)
    if as_json:
        _emit(result, True)
    elif result["exit_code"] != 0:
        print(f"nvq: the job exited {result['exit_code']}{result['hint']}", file=sys.stderr)
    return int(result["exit_code"])


def register(app: typer.Typer, queue_app: typer.Typer) -> None:
    queue_app.command("alerts")(queue_alerts)
    queue_app.command("ack")(queue_ack)
    queue_app.command("backup")(queue_backup)
    queue_app.command("restore")(queue_restore)
    from nvq.cli.keeper_cmds import keeper_app

    queue_app.add_typer(keeper_app, name="keeper")
    project_app = typer.Typer(help="Try a job here before queueing it.", no_args_is_help=True)
    project_app.command("test")(project_test)
    app.add_typer(project_app, name="project")
