"""Serving snapshot blobs to a runner that asked for them (`NeedBlobs`): each blob in
`BlobData` pieces under the frame limit, then `done`. The runner asks a bounded batch
at a time, so a batch is read here whole (in a thread) and queued on the link."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio

from nvq.daemon.core.nodes import NodeRuntime
from nvq.world.blobs import BlobStore
from nvq_runner import protocol as p
from nvq_runner.protocol import is_hash

log = logging.getLogger("nvq.blobs")

PIECE = 4 * 1024 * 1024  # well under MAX_FRAME


def blob_store(home: Path) -> BlobStore:
    """The queue host's blob store, `$NVQ_HOME/blobs`."""
    return BlobStore(home / "blobs")


def pieces(store: BlobStore, req: p.NeedBlobs) -> list[p.BlobData]:
    frames: list[p.BlobData] = []
    for digest in req.hashes:
        if not is_hash(digest):
            return [p.BlobData(req=req.req, error=f"not a blob name: {digest[:80]!r}")]
        try:
            with store.open(digest) as handle:
                data = handle.read(PIECE)
                while True:
                    following = handle.read(PIECE)
                    frames.append(p.BlobData(req=req.req, sha256=digest, data=data,
                                             eof=not following))
                    if not following:
                        break
                    data = following
        except FileNotFoundError:
            return [p.BlobData(
                req=req.req,
                error=f"the queue host no longer holds blob {digest[:12]} of this snapshot "
                "(freed by gc?); submit the job again",
            )]
        except OSError as exc:
            return [p.BlobData(req=req.req, error=f"cannot read blob {digest[:12]}: {exc}")]
    frames.append(p.BlobData(req=req.req, done=True))
    return frames


async def serve(node: NodeRuntime, home: Path, req: p.NeedBlobs) -> None:
    frames = await anyio.to_thread.run_sync(pieces, blob_store(home), req)
    for frame in frames:
        if not node.post(frame):
            log.warning("node %s: cannot queue snapshot blobs (link gone or full)", node.name)
            return
