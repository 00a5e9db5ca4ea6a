"""Requests about container images on the nodes (`nvq image push|ls`); members of
`Request` (requests.py) like the rest."""

from __future__ import annotations

import msgspec


class ImagePush(msgspec.Struct, tag="image_push", frozen=True):
    """Stage image `image` on `nodes` (every node when empty) ahead of its jobs, from
    the archive the client saved into the queue's blob store (`image_manifest`,
    nvq/world/images.py); a node whose runtime has it already fetches nothing."""

    image: str
    image_manifest: str
    image_id: str = ""
    size: int = 0  # the archive's bytes
    nodes: list[str] = []


class ImageList(msgspec.Struct, tag="image_list", frozen=True):
    """Each node's runtime store, as its runner lists it now."""
