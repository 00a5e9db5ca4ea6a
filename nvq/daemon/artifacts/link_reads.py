"""Reading a node's artifact byte ranges over its runner link (`ReadChunks` →
`ChunkBytes`) rather than SFTP: for a node whose SSH connection does not reach its disk
(a Slurm pilot's ends on the login node), so no file system has to be shared.

A reader raises OSError when the node cannot answer; `chunk_sync.take` then keeps the
file's previous version, as it does for a file rewritten under it."""

from __future__ import annotations

from nvq.daemon.artifacts.chunk_sync import ReadRanges
from nvq.daemon.core.awaited import Awaited
from nvq.daemon.core.nodes import NodeRuntime
from nvq_runner.protocol import ChunkBytes, ReadChunks

FEATURE = "chunk_reads"
READ_TIMEOUT = 300.0  # one request is at most chunk_sync.READ_BATCH bytes


def reads_over_link(node: NodeRuntime) -> bool:
    return node.disk_over_link and node.hello is not None and FEATURE in node.hello.features


class LinkReads:
    def __init__(self) -> None:
        self._answers = Awaited[ChunkBytes](READ_TIMEOUT)

    def on_reply(self, msg: ChunkBytes) -> None:
        self._answers.answer(msg.req, msg)

    def reader(self, node: NodeRuntime, job_id: int, root: str) -> ReadRanges:
        """Reads paths under `root` (the tree reply's) of job `job_id`'s artifacts."""
        prefix = root.rstrip("/") + "/"

        async def read(path: str, ranges: list[tuple[int, int]]) -> list[bytes]:
            if not path.startswith(prefix):
                raise OSError(f"{path} is not under the artifacts root {root}")
            rel = path[len(prefix):]
            reply = await self._answers.ask(
                node, lambda req: ReadChunks(req=req, job_id=job_id, path=rel, ranges=ranges))
            if reply is None:
                raise OSError(f"node {node.name} did not answer")
            if reply.error is not None:
                raise OSError(reply.error)
            if len(reply.data) != len(ranges):
                raise OSError(f"node {node.name} sent {len(reply.data)} of {len(ranges)} ranges")
            return reply.data

        return read
