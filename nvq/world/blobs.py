"""The queue host's blob store, `$NVQ_HOME/blobs/`: every file of every snapshot, once
per distinct content, and the snapshot manifests themselves (a manifest is a blob; its
id is its hash). A sweep of a hundred jobs from one directory stores its code once.

Nothing is reference-counted: `gc` is handed the manifests that live jobs still name
and frees every object none of them reaches. Objects younger than a grace period are
kept, so a submit that has stored its blobs but not yet its job is never robbed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import msgspec

from nvq_runner.objects import ObjectDir, ObjectMismatch
from nvq_runner.protocol import (
    Manifest,
    ManifestError,
    decode_manifest,
    encode_manifest,
)

__all__ = ["BlobStore", "GcReport", "ObjectMismatch"]

GC_GRACE = 3600.0


class GcReport(msgspec.Struct, frozen=True):
    objects_freed: int
    bytes_freed: int
    objects_kept: int
    bytes_kept: int


class BlobStore:
    """`root` is `$NVQ_HOME/blobs`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._objects = ObjectDir(root)

    def ensure(self) -> None:
        self._objects.ensure()

    def path(self, digest: str) -> Path:
        return self._objects.path(digest)

    def has(self, digest: str) -> bool:
        return self._objects.has(digest)

    def missing(self, digests: Iterable[str]) -> list[str]:
        """The digests not stored yet. Those present are touched: a submit asks this
        before it records its job, and gc's grace period then covers them too."""
        wanted = list(dict.fromkeys(digests))
        absent = self._objects.missing(wanted)
        gone = set(absent)
        for digest in wanted:
            if digest not in gone:
                self._touch(digest)
        return absent

    def _touch(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.utime(self._objects.path(digest))

    def open(self, digest: str) -> BinaryIO:
        return self._objects.open(digest)

    def read_bytes(self, digest: str) -> bytes:
        return self._objects.read_bytes(digest)

    def put_file(self, source: Path, expected: str | None = None) -> str:
        if expected is not None and self.has(expected):
            self._touch(expected)
            return expected
        return self._objects.put_file(source, expected)

    def put_bytes(self, data: bytes, expected: str | None = None) -> str:
        return self._objects.put_bytes(data, expected)

    def put_chunks(self, chunks: Iterable[bytes], expected: str | None = None) -> str:
        return self._objects.put_chunks(chunks, expected)

    # ------------------------------------------------------------- manifests

    def put_manifest(self, manifest: Manifest) -> str:
        """Store a manifest; its id is returned. The caller stores the files first, so
        a manifest in the store always has its blobs."""
        return self._objects.put_bytes(encode_manifest(manifest))

    def get_manifest(self, manifest_id: str) -> Manifest:
        return decode_manifest(self._objects.read_bytes(manifest_id))

    def missing_for(self, manifest: Manifest) -> list[str]:
        return self._objects.missing(sorted(manifest.hashes()))

    # -------------------------------------------------------------- accounting

    def usage(self) -> tuple[int, int]:
        """(objects, bytes) held now."""
        count = size = 0
        for _digest, st in self._objects.walk():
            count += 1
            size += st.st_size
        return count, size

    def gc(
        self, live_manifest_ids: Iterable[str], *, grace: float = GC_GRACE,
        now: float | None = None, live_objects: Iterable[str] = (),
    ) -> GcReport:
        """Free every object that no live manifest reaches (nor is one). A live id that
        is missing or unreadable keeps nothing and is not an error: its job cannot run
        anyway, and the store must still be able to shrink."""
        now = time.time() if now is None else now
        live: set[str] = set(live_objects)  # kept as they are (artifact trees, chunks)
        for manifest_id in live_manifest_ids:
            live.add(manifest_id)
            try:
                live |= self.get_manifest(manifest_id).hashes()
            except (OSError, ValueError, msgspec.DecodeError, ManifestError):
                continue
        freed = freed_bytes = kept = kept_bytes = 0
        for digest, st in list(self._objects.walk()):
            if digest in live or st.st_mtime > now - grace:
                kept += 1
                kept_bytes += st.st_size
                continue
            self._objects.remove(digest)
            freed += 1
            freed_bytes += st.st_size
        freed_bytes += self._objects.clear_stale_temps(grace, now)
        return GcReport(freed, freed_bytes, kept, kept_bytes)
