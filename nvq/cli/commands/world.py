"""`nvq queue gc` (and `nvq job pull`): keeping, freeing and fetching what jobs took
with them and what they left behind."""

from __future__ import annotations

import typer

from nvq.cli.app import JsonOpt
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
