"""The image messages of the wire protocol (see protocol.py): staging a container
image on a node ahead of its jobs (`nvq image push`), and what each node's runtime
holds.

`StageImage` (daemon → runner) asks the node to put an image into its runtime's
store from the archive the queue host saved into the blob store (nvq/world/images.py),
unless the store has it already; `ImageStaged` answers it under the same `req`.
`NodeImages` (runner → daemon, not journaled: it describes the present) lists the
images in the node's runtime store: in answer to `ListImages` (`nvq image ls`), and
unasked after every image the runner loads, so `queue nodes` shows what the node last
said it holds. Listing costs a run of the runtime's client, so no runner does it
unasked on every connect. A runner understands these when its `Hello` lists the
"images" feature."""

from __future__ import annotations

from typing import Optional

import msgspec


class StageImage(msgspec.Struct, tag="stage_image", frozen=True):
    req: int
    image: str  # the reference the jobs name
    image_manifest: str  # the saved archive's manifest in the blob store
    runtime: str = ""  # [[nodes]] runtime ("": the first the node has)
    image_id: str = ""  # the saved image's id: the node's image of that name must be it


class ListImages(msgspec.Struct, tag="list_images", frozen=True):
    req: int


class ImageStaged(msgspec.Struct, tag="image_staged", frozen=True):
    req: int
    loaded: bool = False  # False without error: the store had it already
    fetched_bytes: int = 0  # archive bytes that came over the link (not in the cache)
    seconds: float = 0.0
    error: Optional[str] = None


class CachedImage(msgspec.Struct, frozen=True):
    id: str  # the runtime's image id (hex, no "sha256:")
    ref: str  # one of its names ("": none); an image with several names is several rows
    size: int  # bytes, as the runtime counts them


class NodeImages(msgspec.Struct, tag="node_images", frozen=True):
    images: list[CachedImage] = []
    runtime: str = ""  # the runtime asked ("": none that can list images)
    req: int = 0  # the `ListImages` answered (0: sent unasked, after a load)
