"""`nvq job artifacts ID [--get DIR]`: a job's stored artifacts."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from nvq.cli import reads
from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.values import counted

on_job = typer.Typer()  # attached to the `job` group in nvq.cli.commands


@on_job.command("artifacts")
def job_artifacts(
    job_id: int = typer.Argument(..., help="Job id."),
    get: Path = typer.Option(None, "--get", help="Copy them into this directory."),
    as_json: bool = JsonOpt,
) -> int:
    """A job's stored artifacts ($NVQ_ARTIFACTS as of its last sync)."""
    if get is None:
        return reads.job_artifacts(job_id, as_json)
    if get.exists() and not get.is_dir():
        raise CliError(f"--get {get}: not a directory", 2)
    doc = Client().artifacts(job_id)
    src = Path(doc.dir)
    copied = []
    for f in doc.files:
        target = get / f.path
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / f.path, target)
        except OSError as exc:
            raise CliError(f"--get {get}: {f.path}: {exc.strerror or exc}") from None
        copied.append(f.path)
    doc.copied_to = str(get.absolute())
    emit(doc, as_json, f"copied {counted(len(copied), 'file')} to {get}")
    return 0
