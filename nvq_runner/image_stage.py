"""The runner's side of `nvq image push` and of `queue nodes`' images: staging an image
ahead of its jobs (`StageImage` → `ImageStaged`), and listing the node's runtime
store (`NodeImages`), both off the runner's loop (the runtime's client is slow)."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from .blobcache import BlobCache
from .blobfetch import BlobFetcher, FetchError
from .container import found_runtimes
from .image_load import ImageError, can_load, load_image
from .protocol import (
    CachedImage,
    ImageStaged,
    ListImages,
    ManifestError,
    NodeImages,
    RunnerMsg,
    StageImage,
)

log = logging.getLogger(__name__)
# One `inspect` line per image: id, its names (a JSON list), its size in bytes.
INSPECT = "{{.Id}}\t{{json .RepoTags}}\t{{.Size}}"


def parse_inspect(text: str) -> list[CachedImage]:
    """The rows of `<runtime> image inspect --format INSPECT …`'s output: one per
    name of each image (one with "" for an image without a name)."""
    rows: list[CachedImage] = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        ident = parts[0].strip().removeprefix("sha256:")
        try:
            names = json.loads(parts[1]) or [""]
            size = int(parts[2])
        except ValueError:
            continue
        rows += [CachedImage(id=ident, ref=str(n), size=size) for n in names]
    return rows


def list_images(runtime: str) -> list[CachedImage]:
    """What `runtime`'s store holds now ([] when it cannot say)."""
    def run(args: list[str]) -> str:
        out = subprocess.run([runtime, *args], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=120, check=False)
        return out.stdout if out.returncode == 0 else ""

    ids = sorted(set(run(["images", "--quiet", "--no-trunc"]).split()))
    return parse_inspect(run(["image", "inspect", "--format", INSPECT, *ids])) if ids else []


class ImageStager:
    def __init__(self, home: Path, cache: BlobCache, fetcher: BlobFetcher,
                 send: Callable[[RunnerMsg], bool]) -> None:
        self.scratch = home / "image-staging"
        self.cache = cache
        self.fetcher = fetcher
        self._send = send
        self._reports: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def runtime(self, asked: str = "") -> str:
        return asked or next(iter(found_runtimes()), "")

    def report(self) -> None:
        """Send `NodeImages` soon, unasked (a job's attempt loaded an image)."""
        if self._reports is None or self._reports.done():
            self._reports = asyncio.get_running_loop().create_task(self._report())

    def on_message(self, msg: StageImage | ListImages) -> None:
        work = self.stage(msg) if isinstance(msg, StageImage) else self._report(msg.req)
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._tasks.discard)

    async def _report(self, req: int = 0) -> None:
        runtime = self.runtime()
        images = await asyncio.to_thread(list_images, runtime) if can_load(runtime) else []
        self._send(NodeImages(images=images, runtime=runtime if can_load(runtime) else "",
                              req=req))

    async def stage(self, msg: StageImage) -> None:
        runtime = self.runtime(msg.runtime)
        began = time.monotonic()
        try:
            if not can_load(runtime):
                raise ImageError("this node has no runtime that can load an image "
                                 "(podman or docker)")
            loaded, fetched = await load_image(msg.image, msg.image_manifest, runtime,
                                               self.scratch, self.cache, self.fetcher,
                                               image_id=msg.image_id)
        except (ImageError, FetchError, ManifestError, OSError,
                subprocess.SubprocessError) as exc:
            self._send(ImageStaged(req=msg.req, error=str(exc),
                                   seconds=time.monotonic() - began))
            return
        if loaded:
            await self._report()  # before the answer: `image ls` right after shows it
        self._send(ImageStaged(req=msg.req, loaded=loaded, fetched_bytes=fetched,
                               seconds=time.monotonic() - began))
