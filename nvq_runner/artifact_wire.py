"""The frames of a chunked artifacts sync: the daemon asks, the runner describes its
view, and the daemon reads the byte ranges it lacks, over SFTP on the node's connection
where it has its own, or as `ReadChunks`/`ChunkBytes` on the runner's link (a Slurm
pilot, whose SSH connection is the login node's and sees no compute-node disk)."""

from __future__ import annotations

from typing import Optional

import msgspec


class ChunkSource(msgspec.Struct, frozen=True, array_like=True):
    """Chunk `sha256` is `size` bytes at `offset` of `path` under the reply's root."""

    sha256: str
    path: str
    offset: int
    size: int


class ArtifactsTreeQuery(msgspec.Struct, tag="artifacts_tree_query", frozen=True):
    """Describe job `job_id`'s artifacts as a chunk tree (answered by ArtifactsTreeReply).
    `known` is the tree the queue host holds already: files it describes with the same
    size and mtime are not read again."""

    req: int
    job_id: int
    known: str = ""


class ArtifactsTreeReply(msgspec.Struct, tag="artifacts_tree", frozen=True):
    req: int
    job_id: int
    tree: bytes = b""  # encode_tree()
    root: str = ""  # where `sources` are read (the upper directory when mounted)
    sources: list[ChunkSource] = []
    fetched_bytes: int = 0  # chunks this attempt pulled from the queue host so far
    mode: str = "plain"  # "mounted" | "restored" | "plain"
    note: str = ""
    error: Optional[str] = None


class SyncWanted(msgspec.Struct, tag="sync_wanted", frozen=True):
    """The job touched `$NVQ_ARTIFACTS/.sync`: sync its artifacts now, not at the next
    period."""

    job_id: int
    attempt: int


class ReadChunks(msgspec.Struct, tag="read_chunks", frozen=True):
    """Read `ranges` ((offset, size) pairs) of `path`, relative to the root job
    `job_id`'s last ArtifactsTreeReply named; answered by ChunkBytes. The daemon keeps
    each request well under the frame limit."""

    req: int
    job_id: int
    path: str
    ranges: list[tuple[int, int]]


class ChunkBytes(msgspec.Struct, tag="chunk_bytes", frozen=True):
    req: int
    data: list[bytes] = []  # one per range, in order
    error: Optional[str] = None
