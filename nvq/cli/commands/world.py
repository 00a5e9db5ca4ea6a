"""`nvq queue gc` (and `nvq job pull`): keeping, freeing and fetching what jobs took
with them and what they left behind. Over `[remote]`, `job pull` runs on the typing
machine and reads the queue host's `job pull --tar`; `queue receive-blobs` is the
queue host's end of a forwarded submit's snapshot (nvq.world.blobsync)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit
from nvq.client import Client
from nvq.remote import PULL_FLAG
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


@on_queue.command("receive-blobs", hidden=True)  # = RECEIVE_BLOBS, spelled out for command_info
def queue_receive_blobs() -> int:
    """Take a forwarded submit's snapshot blobs on stdin (the queue host's end)."""
    from nvq.home import default_root, owns_home
    from nvq.world.blobs import BlobStore
    from nvq.world.blobsync import SyncError, receive
    from nvq.world.submission import blob_root

    root = default_root()
    if not owns_home(root):
        # a member: the daemon stores the blobs as the queue's user, and counts them
        # as this member's (what their submit may then name)
        from nvq.world.snapshot import SnapshotError
        from nvq.world.through_daemon import relay_snapshot

        try:
            relay_snapshot(Client(), sys.stdin.buffer, sys.stdout.buffer)
        except SnapshotError as exc:
            raise CliError(str(exc), 1) from None
        return 0
    store = BlobStore(blob_root(root))
    try:
        receive(store, sys.stdin.buffer, sys.stdout.buffer)
    except SyncError as exc:
        raise CliError(str(exc), 1) from None
    except PermissionError as exc:
        raise CliError(
            f"cannot write the snapshot into {store.root}: {exc.strerror} "
            "(submit as the queue's owner, or pass --no-snapshot)", 1) from None
    return 0


@on_job.command("pull")
def job_pull(
    job_id: int = typer.Argument(..., help="Job id."),
    paths: list[str] = typer.Argument(None, help="Paths in its working directory (default: all)."),
    to: Path = typer.Option(None, "--to", help="Directory to put them in (default: ./job-ID)."),
    tar: bool = typer.Option(False, "--tar", hidden=True),
    over_remote: bool = typer.Option(False, PULL_FLAG, hidden=True),
    as_json: bool = JsonOpt,
) -> int:
    """Copy a job's working directory (or paths in it) and its artifacts here."""
    dest = (to or Path(f"job-{job_id}")).expanduser().absolute()
    if over_remote:
        from nvq.cli.pull_remote import pull_through_queue_host

        staging, node = pull_through_queue_host(job_id, paths or [], as_json)
    else:
        pulled = Client().pull(job_id, paths or [])
        staging, node = Path(pulled.path), pulled.node
    try:
        if tar:  # the typing machine's `job pull` over [remote] reads this
            from nvq.cli.pull_remote import write_tar

            write_tar(staging, node, sys.stdout.buffer)
            return 0
        placed = _move_into(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    doc = {"id": job_id, "node": node, "to": str(dest), "paths": placed}
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

