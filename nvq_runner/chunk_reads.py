"""Reading the byte ranges of an artifacts sync for the daemon over the runner's own
link (`ReadChunks` → `ChunkBytes`), where the daemon cannot read the node's disk over
SFTP: a Slurm pilot's SSH connection ends on the login node.

The path comes from the daemon but names a file the job wrote, so it is opened beneath
the job's root one name at a time without following a symlink: a job that swaps a file
for a link after the scan gets an error, never the link's target. The daemon checks each
chunk's hash against the tree as well."""

from __future__ import annotations

import os
from pathlib import Path

from .protocol import ChunkBytes, ReadChunks
from .tree_paths import safe_path

# A reply must fit in one frame (MAX_FRAME, 64 MiB); the daemon asks for far less.
MAX_REQUEST = 48 * 1024 * 1024


def open_beneath(root: Path, rel: str) -> int:
    """A read-only descriptor of `rel` under `root`, following no symlink."""
    if not safe_path(rel):
        raise OSError(f"not a path inside the artifacts: {rel!r}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
    finally:
        os.close(fd)


def read_chunks(root: Path, msg: ReadChunks) -> ChunkBytes:
    """The answer to `msg` (blocking: run it in a thread)."""
    if sum(size for _, size in msg.ranges) > MAX_REQUEST or any(
        offset < 0 or size < 0 for offset, size in msg.ranges
    ):
        return ChunkBytes(req=msg.req, error=f"read of {msg.path!r} refused: bad ranges")
    try:
        fd = open_beneath(root, msg.path)
        try:
            data = [os.pread(fd, size, offset) for offset, size in msg.ranges]
        finally:
            os.close(fd)
    except OSError as exc:
        return ChunkBytes(req=msg.req, error=f"{msg.path}: {exc.strerror or exc}")
    return ChunkBytes(req=msg.req, data=data)
