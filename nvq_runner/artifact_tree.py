"""A job's artifacts directory as the blob store keeps it: every file with its size,
mode, mtime and the list of its chunks (see chunking.py). One tree per sync, stored as
a blob of its own; the chunks are blobs too, so two syncs of a checkpoint that changed
by 1 % share 99 % of their objects and the second sends only the rest.

A tree is what the next attempt's node mounts (lazyfs.py) or restores, and it can be
built without reading a byte of a file the previous tree already describes with the
same size and mtime. Lives in nvq_runner: a node reads and writes it without nvq.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from .chunking import chunks
from .errors import NvqRunnerError
from .tree_paths import TreePaths

TREE_VERSION = 1
FILE: Literal["f"] = "f"
DIR: Literal["d"] = "d"
# Names a job uses to talk to nvq through its artifacts directory; never synced.
CONTROL_NAMES = frozenset({".sync"})


class Chunk(msgspec.Struct, frozen=True, array_like=True):
    sha256: str
    size: int


class TreeEntry(msgspec.Struct, frozen=True, array_like=True):
    path: str  # relative, "/"-separated
    kind: Literal["f", "d"]
    mode: int  # permission bits
    size: int = 0
    mtime_ns: int = 0
    chunks: list[Chunk] = []


class ArtifactTree(msgspec.Struct, frozen=True, tag="artifact_tree"):
    entries: list[TreeEntry] = []
    version: int = TREE_VERSION

    def files(self) -> list[TreeEntry]:
        return [e for e in self.entries if e.kind == FILE]

    def hashes(self) -> set[str]:
        return {c.sha256 for e in self.entries for c in e.chunks}

    def sizes(self) -> dict[str, int]:
        return {c.sha256: c.size for e in self.entries for c in e.chunks}

    def total_size(self) -> int:
        return sum(e.size for e in self.entries if e.kind == FILE)

    def by_path(self) -> dict[str, TreeEntry]:
        return {e.path: e for e in self.entries}


class TreeError(NvqRunnerError, ValueError):
    """A tree that cannot be mounted or restored safely."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ArtifactTree)


def encode_tree(tree: ArtifactTree) -> bytes:
    return _encoder.encode(tree)


def decode_tree(data: bytes) -> ArtifactTree:
    tree = _decoder.decode(data)
    check_tree(tree)
    return tree


def tree_id(tree: ArtifactTree) -> str:
    return hashlib.sha256(encode_tree(tree)).hexdigest()


def check_tree(tree: ArtifactTree) -> None:
    """Refuse what could reach outside the mount or restore point, and files whose
    chunks do not add up to their size (paths: the rule of tree_paths, shared with
    submit manifests)."""
    paths = TreePaths("artifacts tree")
    for entry in tree.entries:
        problem = paths.add(entry.path, entry.kind == DIR)
        if problem is not None:
            raise TreeError(problem)
        if entry.kind != DIR and sum(c.size for c in entry.chunks) != entry.size:
            raise TreeError(f"{entry.path!r}: chunks do not add up to its size")


@dataclass(frozen=True)
class Source:
    """Where a chunk found by a scan can be read: `path` (relative to the scanned
    root) from `offset`."""

    path: str
    offset: int
    size: int


@dataclass
class Scan:
    tree: ArtifactTree
    sources: dict[str, Source]  # chunks read in this scan → where they are
    bytes_read: int = 0


def chunk_file(path: Path, rel: str, sources: dict[str, Source]) -> tuple[list[Chunk], int]:
    out: list[Chunk] = []
    offset = 0
    with open(path, "rb") as handle:
        for data in chunks(handle):
            digest = hashlib.sha256(data).hexdigest()
            out.append(Chunk(digest, len(data)))
            sources.setdefault(digest, Source(rel, offset, len(data)))
            offset += len(data)
    return out, offset


def scan(root: Path, previous: ArtifactTree | None = None, *,
         keep: Iterable[TreeEntry] = ()) -> Scan:
    """The tree of `root` now. A file with the size and mtime that `previous` records
    keeps its chunk list unread. `keep` are entries to add as they are (the mounted
    view's files nobody has touched: they are not under `root` at all)."""
    known = previous.by_path() if previous is not None else {}
    entries: dict[str, TreeEntry] = {e.path: e for e in keep}
    sources: dict[str, Source] = {}
    read = 0
    if root.is_dir():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            base = Path(dirpath)
            for name in dirnames:
                full = base / name
                rel = full.relative_to(root).as_posix()
                st = full.lstat()
                if stat.S_ISDIR(st.st_mode):
                    entries[rel] = TreeEntry(rel, DIR, stat.S_IMODE(st.st_mode))
            for name in filenames:
                full = base / name
                rel = full.relative_to(root).as_posix()
                if rel in CONTROL_NAMES:
                    continue
                try:
                    st = full.lstat()
                except OSError:
                    continue  # replaced while we looked: next sync
                if not stat.S_ISREG(st.st_mode):
                    continue  # symlinks are not followed out of the directory
                old = known.get(rel)
                mode = stat.S_IMODE(st.st_mode)
                if old is not None and old.kind == FILE and old.size == st.st_size \
                        and old.mtime_ns == st.st_mtime_ns:
                    entries[rel] = TreeEntry(rel, FILE, mode, old.size, old.mtime_ns, old.chunks)
                    continue
                try:
                    parts, size = chunk_file(full, rel, sources)
                except OSError:
                    continue
                read += size
                entries[rel] = TreeEntry(rel, FILE, mode, size, st.st_mtime_ns, parts)
    ordered = _with_parents(entries)
    tree = ArtifactTree(ordered)
    check_tree(tree)
    return Scan(tree, sources, read)


def _with_parents(entries: dict[str, TreeEntry]) -> list[TreeEntry]:
    """Sorted so a directory precedes what it holds, with any missing parent added."""
    for path in list(entries):
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent not in entries:
                entries[parent] = TreeEntry(parent, DIR, 0o700)
    return sorted(entries.values(), key=lambda e: e.path.split("/"))
