"""The snapshot manifest as it travels: what a job's working copy holds, file by file.

The queue host stores a manifest as a blob of its own (its id is the sha256 of this
encoding), and a node reads it to rebuild the working copy from its blob cache. It
lives in nvq_runner, beside the wire protocol, because a node must read it without
nvq. Paths are relative POSIX paths; entries are sorted by path, so every directory
comes before what it holds and the same tree always encodes to the same bytes (the
same id: a sweep of one directory stores one manifest).
"""

from __future__ import annotations

import hashlib
from typing import Literal

import msgspec

from .tree_paths import TreePaths

MANIFEST_VERSION = 1

FILE: Literal["f"] = "f"
DIR: Literal["d"] = "d"
LINK: Literal["l"] = "l"


class Entry(msgspec.Struct, frozen=True, array_like=True):
    """One path of the tree. `sha256` is set for files, `target` for symlinks (the link
    text as it was, never followed)."""

    path: str
    kind: Literal["f", "d", "l"]
    mode: int  # permission bits only (0o7777)
    size: int = 0
    sha256: str = ""
    target: str = ""


class Manifest(msgspec.Struct, frozen=True):
    entries: list[Entry]
    version: int = MANIFEST_VERSION

    def files(self) -> list[Entry]:
        return [e for e in self.entries if e.kind == FILE]

    def hashes(self) -> set[str]:
        """The blobs this tree needs (each once, however many files share it)."""
        return {e.sha256 for e in self.entries if e.kind == FILE}

    def total_size(self) -> int:
        return sum(e.size for e in self.entries if e.kind == FILE)


class ManifestError(ValueError):
    """A manifest that cannot be materialised safely."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Manifest)


def encode_manifest(manifest: Manifest) -> bytes:
    return _encoder.encode(manifest)


def decode_manifest(data: bytes) -> Manifest:
    manifest = _decoder.decode(data)
    check_manifest(manifest)
    return manifest


def manifest_id(manifest: Manifest) -> str:
    return hashlib.sha256(encode_manifest(manifest)).hexdigest()


def is_hash(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def check_manifest(manifest: Manifest) -> None:
    """Refuse anything that could write outside the destination: absolute paths, `..`,
    duplicate paths, or an entry whose parent is not a directory of the same manifest
    (so nothing is ever written through a symlink the manifest itself created): the
    rule of tree_paths, shared with artifact trees."""
    paths = TreePaths("manifest")
    for entry in manifest.entries:
        problem = paths.add(entry.path, entry.kind == DIR)
        if problem is not None:
            raise ManifestError(problem)
        if entry.kind == FILE and not is_hash(entry.sha256):
            raise ManifestError(f"{entry.path!r} has no valid sha256")
