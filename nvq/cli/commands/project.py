"""`nvq project test`: run the manifest's job once, here, before queueing it."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError, manifest_fields
from nvq.cli.render.output import emit

on_project = typer.Typer()  # attached to the `project` group in nvq.cli.commands


@on_project.command("test")
def project_test(
    manifest: Path = typer.Option(Path("manifest.toml"), "--manifest", help="The manifest."),
    skip_limits: bool = typer.Option(False, "--skip-limits", help="Do not apply its memory limit."),
    keep: bool = typer.Option(False, "--keep", help="Keep its job directory (logs, result)."),
    image: str = typer.Option(None, "--image", help="Run it in this container image here."),
    as_json: bool = JsonOpt,
) -> int:
    """Run the manifest's job once, here, in the foreground, under its memory limit."""
    from nvq.project import run_test

    fields = manifest_fields(manifest)
    if not fields.get("command"):
        raise CliError(f"{manifest}: job.command: missing (nothing to run)", 2)
    if image is not None:
        fields["image"] = image
    started = time.monotonic()
    try:
        result = run_test(fields, limits=not skip_limits, capture=as_json)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
    result["seconds"] = round(time.monotonic() - started, 3)
    if keep:
        if not as_json:
            print(f"kept its job directory: {result['job_dir']}", file=sys.stderr)
    else:
        shutil.rmtree(result["job_dir"], ignore_errors=True)
        result["job_dir"] = None
    if as_json:
        emit(result, True)
    elif result["exit_code"] != 0:
        print(f"nvq: the job exited {result['exit_code']}{result['hint']}", file=sys.stderr)
    return int(result["exit_code"])
