"""Loading a job's image on a node that lacks it, from the archive the queue host
saved (nvq/world/images.py): the chunks come through the node's blob cache over the
runner's own connection, are joined into one archive in the job directory, and
`<runtime> load` puts the image into the node's store, where it stays for the next
job (the runtime's store is the per-node cache; the chunks also stay in the blob
cache, within cache_size, until evicted)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from .blobcache import BlobCache
from .blobfetch import BlobFetcher
from .container import found_runtimes
from .jobfiles import JobDir
from .manifest_wire import Manifest
from .protocol import Start

# Two jobs of one image starting together load it once.
_loading: dict[str, asyncio.Lock] = {}


class ImageError(Exception):
    pass


def runtime_of(msg: Start) -> str:
    return msg.runtime or next(iter(found_runtimes()), "")


def has_image(runtime: str, ref: str) -> bool:
    out = subprocess.run([runtime, "image", "inspect", ref], stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=120, check=False)
    return out.returncode == 0


async def ensure_image(msg: Start, d: JobDir, cache: BlobCache, fetcher: BlobFetcher) -> bool:
    """Load the job's image unless the node's runtime has it; True when it was loaded."""
    runtime = runtime_of(msg)
    if runtime not in ("podman", "docker") or shutil.which(runtime) is None:
        return False  # no runtime to load into: the launch says so
    lock = _loading.setdefault(msg.image, asyncio.Lock())
    async with lock:
        if await asyncio.to_thread(has_image, runtime, msg.image):
            return False
        manifest = cache.load_manifest(msg.image_manifest)
        if manifest is None:
            await fetcher.fetch(msg.job_id, [msg.image_manifest], {})
            manifest = cache.load_manifest(msg.image_manifest)
            if manifest is None:
                raise ImageError("the image's manifest did not arrive")
        files = manifest.files()
        missing = [e.sha256 for e in files if not cache.has(e.sha256)]
        if missing:
            await fetcher.fetch(msg.job_id, missing, {e.sha256: e.size for e in files})
        d.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        await asyncio.to_thread(_load, runtime, manifest, cache, d.path / "image.tar")
        return True


def _load(runtime: str, manifest: Manifest, cache: BlobCache, archive: Path) -> None:
    try:
        with archive.open("wb") as out:
            for entry in manifest.files():
                with cache.open(entry.sha256) as part:
                    shutil.copyfileobj(part, out, 1024 * 1024)
        loaded = subprocess.run([runtime, "load", "-i", str(archive)], stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=3600, check=False)
        if loaded.returncode != 0:
            raise ImageError(f"{runtime} load: {loaded.stderr.strip()[-300:]}")
    except FileNotFoundError as exc:
        raise ImageError(f"a chunk of the image left the node's cache before use: {exc}") from None
    finally:
        archive.unlink(missing_ok=True)
