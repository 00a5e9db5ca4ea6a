"""`nvq image push|ls`: container images on the nodes. `push` stages an image ahead of
its jobs (the archive a submit would save, loaded on each node now rather than when
the first job starts there); `ls` lists what each node's runtime store holds."""

from __future__ import annotations

import sys

import typer

from nvq.cli.app import JsonOpt
from nvq.cli.params import CliError
from nvq.cli.render.output import emit

on_image = typer.Typer()  # attached to the `image` group in nvq.cli.commands


@on_image.command("push")
def image_push(
    ref: str = typer.Argument(..., help="The image, as this host's podman/docker names it."),
    nodes: str = typer.Option(None, "--nodes", help="Only these nodes (a,b; default: all)."),
    as_json: bool = JsonOpt,
) -> int:
    """Stage an image on nodes ahead of its jobs (nodes that have it fetch nothing)."""
    from nvq.cli.render.images import pushed_text
    from nvq.client import Client
    from nvq.domain.validate import check_image
    from nvq.home import default_root
    from nvq.world.blobs import BlobStore
    from nvq.world.images import image_id, local_runtime, stage_image
    from nvq.world.submission import blob_root

    problem = check_image(ref)
    if problem is not None:
        raise CliError(problem, 2)
    names = [n.strip() for n in (nodes or "").split(",") if n.strip()]
    if nodes is not None and not names:
        raise CliError("--nodes names no node", 2)
    runtime = local_runtime()
    if runtime is None:
        raise CliError("this host has no podman or docker to save the image from", 2)
    client = Client()
    client.ping()  # a queue to push to, before minutes of saving
    root = default_root()
    store = BlobStore(blob_root(root))
    if image_id(runtime, ref) is None:
        raise CliError(f"this host's {runtime} has no image {ref} "
                       f"(`{runtime} pull {ref}` here first)", 2)
    if not as_json:
        print(f"saving {ref} from this host's {runtime}…", file=sys.stderr, flush=True)
    try:
        staged = stage_image(ref, root, store)
    except OSError as exc:
        raise CliError(f"cannot save {ref}: {exc}", 1) from None
    if staged is None:
        raise CliError(f"this host's {runtime} lost the image {ref} while it was saved", 1)
    manifest, ident = staged
    size = sum(e.size for e in store.get_manifest(manifest).files())
    if not as_json:
        print(f"staging {ref} (sha256:{ident[:12]}, {size / 2**20:.1f} MiB) on "
              f"{', '.join(names) if names else 'every node'}…", file=sys.stderr, flush=True)
    doc = client.image_push(ref, manifest, image_id=ident, size=size, nodes=names)
    emit(doc, as_json, pushed_text(doc))
    return 1 if any(n.error for n in doc.nodes) else 0


@on_image.command("ls")
def image_ls(as_json: bool = JsonOpt) -> int:
    """Each node's cached images (id, name, size), as its runner lists them now."""
    from nvq.cli import reads

    return reads.image_ls(as_json)
