"""Carrying a container image to nodes that cannot pull it: the queue host's runtime
saves it (`podman save`), and the archive goes into the blob store in chunks under one
manifest, which a node's runner fetches over its own connection and loads
(`nvq_runner/image_load.py`) when its runtime lacks the image.

Staged once per image id: `$NVQ_HOME/images/<id>` remembers the manifest, so a sweep
of a hundred jobs from one image saves it once. The archive is cut into content-defined
chunks (nvq_runner/chunking.py, as checkpoints are): a new version of an image shares
the chunks of every layer it did not change with the old one, so a node that loaded
the old one fetches only what changed (the node's blob cache still holding them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from nvq.world.blobs import BlobStore
from nvq_runner.chunking import chunks
from nvq_runner.protocol import FILE, Entry, Manifest, is_hash

RUNTIMES = ("podman", "docker")  # those with `save` and `load`


def local_runtime() -> str | None:
    return next((r for r in RUNTIMES if shutil.which(r)), None)


def image_id(runtime: str, ref: str) -> str | None:
    """The id of `ref` in this host's store (None: not here)."""
    try:
        out = subprocess.run([runtime, "image", "inspect", "--format", "{{.Id}}", ref],
                             capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout.strip().removeprefix("sha256:")
    return text if out.returncode == 0 and is_hash(text) else None


def stage_image(ref: str, home: Path, store: BlobStore) -> tuple[str, str] | None:
    """(manifest, image id) of `ref` as this host's runtime saves it, stored in
    `store`; None when this host has no runtime or not the image (the node must then
    have or pull it). Raises OSError when the archive cannot be written or stored."""
    runtime = local_runtime()
    if runtime is None:
        return None
    ident = image_id(runtime, ref)
    if ident is None:
        return None
    known = home / "images" / ident
    try:
        manifest_id = known.read_text().strip()
        if is_hash(manifest_id) and store.has(manifest_id):
            return manifest_id, ident
    except OSError:
        pass
    known.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=known.parent) as tmp:
        archive = Path(tmp) / "image.tar"
        saved = subprocess.run([runtime, "save", "-o", str(archive), ref],
                               capture_output=True, text=True, timeout=3600, check=False)
        if saved.returncode != 0:
            raise OSError(f"{runtime} save {ref}: {saved.stderr.strip()[-300:]}")
        entries: list[Entry] = []
        with archive.open("rb") as f:
            for chunk in chunks(f):
                digest = store.put_bytes(chunk)
                entries.append(Entry(f"image.tar.{len(entries):06d}", FILE, 0o600,
                                     len(chunk), digest))
    manifest_id = store.put_manifest(Manifest(entries))
    fd = os.open(known, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(manifest_id + "\n")
    return manifest_id, ident
