"""`nvq queue gc` (and `nvq job pull`): keeping, freeing and fetching what jobs took
with them and what they left behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.world.snapshot import format_size

on_queue = typer.Typer()  # attached to the `queue` group in nvq.cli.commands
on_job = typer.Typer()  # attached to the `job` group


@on_queue.command("gc")
def queue_gc(as_json: bool = JsonOpt) -> int:
    """Free snapshot files no job in the queue uses (node caches evict by size)."""
    done = Client().gc()
    emit(
        done,
        as_json,
        f"freed {done.objects_freed} snapshot objects ({format_size(done.bytes_freed)}); "
        f"{done.objects_kept} kept ({format_size(done.bytes_kept)})",
    )
    return 0


@on_job.command("pull")
def job_pull(
    job_id: int = typer.Argument(..., help="Job id."),
    paths: list[str] = typer.Argument(None, help="Paths in its working directory (default: all)."),
    to: Path = typer.Option(None, "--to", help="Directory to put them in (default: ./job-ID)."),
    as_json: bool = JsonOpt,
) -> int:
    """Copy a job's working directory (or paths in it) and its artifacts here."""
    dest = (to or Path(f"job-{job_id}")).expanduser().absolute()
    pulled = Client().pull(job_id, paths or [])
    staging = Path(pulled.path)
    try:
        placed = _move_into(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    doc = {"id": job_id, "node": pulled.node, "to": str(dest), "paths": placed}
    emit(doc, as_json, f"pulled {', '.join(placed) or 'nothing'} of job {job_id} into {dest}")
    return 0


def _move_into(staging: Path, dest: Path) -> list[str]:
    """Move what the daemon staged into `dest`, never over something already there."""
    items = sorted(p.name for p in staging.iterdir())
    clash = [rel for rel in items if (dest / rel).exists()]
    if clash:
        raise CliError(f"{dest / clash[0]} already exists: pick another --to", 1)
    for rel in items:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staging / rel, dest / rel)
    return items

