"""Putting a job's image into the node's runtime store when it lacks it.

From the queue host: the archive the queue host saved (nvq/world/images.py) comes in
chunks through the node's blob cache over the runner's own connection, is joined
into one archive in a scratch directory, and `<runtime> load` puts the image into
the node's store, where it stays for the next job (the runtime's store is the
per-node cache; the chunks also stay in the blob cache, within cache_size, until
evicted). A job's attempt does this before it starts; `nvq image push` does it ahead
of any job (`StageImage`, image_stage.py).

From its registry: when the queue host had no copy to send (its own store lacks the
image), the node pulls it itself, and a job whose image cannot be had either way
fails before it starts, saying so in one line."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from .blobcache import BlobCache
from .blobfetch import BlobFetcher
from .container import found_runtimes
from .errors import NvqRunnerError
from .jobfiles import JobDir
from .protocol import Manifest, Start

# Two jobs (or a push and a job) of one image load it once.
_loading: dict[str, asyncio.Lock] = {}
LOADERS = ("podman", "docker")  # the runtimes with `load`, `pull` and `images`


class ImageError(NvqRunnerError):
    pass


def runtime_of(msg: Start) -> str:
    return msg.runtime or next(iter(found_runtimes()), "")


def can_load(runtime: str) -> bool:
    return runtime in LOADERS and shutil.which(runtime) is not None


def has_image(runtime: str, ref: str, ident: str = "") -> bool:
    """The node's store has `ref`, and it is image `ident` when that is given (a tag
    pushed again names a new image; the node's may be the older one)."""
    out = subprocess.run([runtime, "image", "inspect", "--format", "{{.Id}}", ref],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=120, check=False)
    return out.returncode == 0 and (not ident or out.stdout.strip().removeprefix("sha256:") == ident)


async def ensure_image(msg: Start, d: JobDir, cache: BlobCache, fetcher: BlobFetcher) -> bool:
    """Make the job's image present unless the node's runtime has it: loaded from the
    queue host's archive, or pulled when the queue host sent none. True when the
    store changed."""
    runtime = runtime_of(msg)
    if not can_load(runtime):
        return False  # apptainer pulls by itself; no runtime at all: the launch says so
    if not msg.image_manifest:
        return await pull_image(runtime, msg.image)
    loaded, _ = await load_image(msg.image, msg.image_manifest, runtime, d.path, cache, fetcher,
                                 job_id=msg.job_id, image_id=msg.image_id)
    return loaded


async def pull_image(runtime: str, ref: str) -> bool:
    async with _loading.setdefault(ref, asyncio.Lock()):
        if await asyncio.to_thread(has_image, runtime, ref):
            return False
        out = await asyncio.to_thread(
            subprocess.run, [runtime, "pull", "--quiet", ref], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=3600, check=False)
        if out.returncode != 0:
            why = (out.stderr.strip().splitlines() or ["no reason given"])[-1][-300:]
            raise ImageError(f"the queue host had no copy to send and {runtime} pull failed "
                             f"here: {why}")
        return True


async def load_image(
    image: str, manifest_id: str, runtime: str, scratch: Path, cache: BlobCache,
    fetcher: BlobFetcher, job_id: int = 0, image_id: str = "",
) -> tuple[bool, int]:
    """(loaded, bytes fetched over the link): the image from the queue host's saved
    archive `manifest_id`, unless the runtime's store has it already."""
    async with _loading.setdefault(image, asyncio.Lock()):
        if await asyncio.to_thread(has_image, runtime, image, image_id):
            return False, 0
        manifest = cache.load_manifest(manifest_id)
        if manifest is None:
            await fetcher.fetch(job_id, [manifest_id], {})
            manifest = cache.load_manifest(manifest_id)
            if manifest is None:
                raise ImageError("the image's manifest did not arrive")
        files = manifest.files()
        missing = [e for e in files if not cache.has(e.sha256)]
        if missing:
            await fetcher.fetch(job_id, [e.sha256 for e in missing],
                                {e.sha256: e.size for e in files})
        await asyncio.to_thread(_load, runtime, manifest, cache, scratch / "image.tar")
        return True, sum(e.size for e in missing)


def _load(runtime: str, manifest: Manifest, cache: BlobCache, archive: Path) -> None:
    archive.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
