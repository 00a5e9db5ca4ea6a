"""A snapshot's blobs crossing to the queue host over one pipe pair: the `[remote]`
forward of `job submit` takes the snapshot where the command was typed, and only the
blobs the queue host lacks go over the SSH connection.

The exchange, on the remote command's stdin and stdout:

    typing machine → queue host   one line: a JSON list of every blob's sha256, the
                                  snapshot's manifest last
    queue host → typing machine   one line: the JSON list of those it lacks, in order
    typing machine → queue host   per lacking blob: "<sha256> <size>\\n", then its bytes
    queue host → typing machine   one line: {"stored": N}

Each blob is hashed again as it is stored and refused unless it matches its name, and
the manifest goes last, so a manifest in the store always has its files (what the
submit handler checks) even when a transfer dies half way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterator, Mapping
from pathlib import Path
from typing import IO

import msgspec

from nvq.errors import Internal
from nvq.world.blobs import BlobStore, ObjectMismatch
from nvq_runner.protocol import is_hash

__all__ = ["SourceChanged", "SyncError", "receive", "send"]

CHUNK = 1024 * 1024
MAX_LIST_LINE = 200 * 1024 * 1024  # a million blobs' names, with room to spare
MAX_HEADER = 128


class SyncError(Internal):
    """The exchange broke off; the message is one line for the user."""


class SourceChanged(SyncError):
    """A file of the snapshot changed on this machine after it was hashed."""


def _line(stream: IO[bytes], limit: int, what: str) -> bytes:
    line = stream.readline(limit)
    if not line.endswith(b"\n"):
        raise SyncError(f"the blob exchange ended early (waiting for {what})")
    return line


def _read_exact(stream: IO[bytes], size: int) -> Iterator[bytes]:
    left = size
    while left:
        chunk = stream.read(min(CHUNK, left))
        if not chunk:
            raise SyncError("the blob exchange ended in the middle of a file")
        left -= len(chunk)
        yield chunk


def receive(store: BlobStore, inp: IO[bytes], out: IO[bytes],
            max_bytes: int | None = None, known: Container[str] | None = None,
            proved: Callable[[list[str]], None] | None = None) -> int:
    """The queue host's side: store the blobs it lacks; returns how many came.

    For a sender the queue does not trust (a member): `max_bytes` is the most one
    exchange may bring (`[submit] max_snapshot`), and `known` holds the blobs this
    sender has sent before: every other one is asked for even when the store has it,
    so that the answer says nothing of what other users stored, and naming a blob
    (another user's snapshot, whose id `job show` lists) is not having it.
    `proved(names)` is told every blob of the exchange once all came, before the
    receipt (after which the sender submits)."""
    try:
        wanted = msgspec.json.decode(_line(inp, MAX_LIST_LINE, "the list"), type=list[str])
    except msgspec.DecodeError:
        raise SyncError("the blob list is not one nvq sent") from None
    bad = [name for name in wanted if not is_hash(name)]
    if bad:
        raise SyncError(f"not a blob name: {bad[0][:80]!r}")
    store.ensure()
    missing = store.missing(wanted)
    if known is not None:
        lacking = set(missing)
        missing = [name for name in dict.fromkeys(wanted) if name in lacking or name not in known]
    out.write(msgspec.json.encode(missing) + b"\n")
    out.flush()
    for digest in missing:
        name, _, size = _line(inp, MAX_HEADER, "a file").decode().strip().partition(" ")
        if name != digest or not size.isdigit():
            raise SyncError(f"expected blob {digest[:12]}, got {name[:80]!r}")
        if max_bytes is not None:
            max_bytes -= int(size)
            if max_bytes < 0:
                raise SyncError("the snapshot is larger than [submit] max_snapshot")
        try:
            store.put_chunks(_read_exact(inp, int(size)), expected=digest)
        except ObjectMismatch:
            raise SyncError(f"blob {digest[:12]} arrived with other content") from None
    if proved is not None:
        proved(wanted)
    out.write(msgspec.json.encode({"stored": len(missing)}) + b"\n")
    out.flush()
    return len(missing)


def _send_file(source: Path | bytes, digest: str, out: IO[bytes]) -> int:
    if isinstance(source, bytes):
        out.write(f"{digest} {len(source)}\n".encode())
        out.write(source)
        return len(source)
    with open(source, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        out.write(f"{digest} {size}\n".encode())
        left = size
        while left:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                raise SourceChanged(f"{source} changed while it was being sent; submit again")
            out.write(chunk)
            left -= len(chunk)
    return size


def send(sources: Mapping[str, Path | bytes], inp: IO[bytes], out: IO[bytes]) -> tuple[int, int]:
    """The typing machine's side. `sources` holds every blob (a file to read, or the
    bytes themselves), in the order to name them: the manifest last. `inp` is what the
    queue host writes, `out` what it reads. Returns (blobs sent, bytes sent)."""
    out.write(msgspec.json.encode(list(sources)) + b"\n")
    out.flush()
    try:
        missing = msgspec.json.decode(_line(inp, MAX_LIST_LINE, "the answer"), type=list[str])
    except msgspec.DecodeError:
        raise SyncError("the queue host's answer is not one nvq sent") from None
    sent = 0
    for digest in missing:
        if digest not in sources:
            raise SyncError(f"the queue host asked for an unknown blob {digest[:12]}")
        sent += _send_file(sources[digest], digest, out)
    out.flush()
    _line(inp, MAX_HEADER, "the receipt")
    return len(missing), sent
