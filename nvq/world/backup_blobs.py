"""The snapshot blobs a backup carries: a queue restored from a backup must still be
able to start its unfinished jobs, whose code lives in `$NVQ_HOME/blobs`, not in
queue.db. So the backup's copy of the database gets one more table, `backup_blobs`,
holding every blob (manifests included) that an unfinished job's snapshot reaches;
the backup stays one self-contained file. A restore puts them back into the blob
store (each checked against its name) and drops the table from the restored queue.

Finished jobs' snapshots are not carried: nothing will run them again, and a sweep's
history would otherwise make every backup as large as all the code ever submitted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import msgspec

from nvq.model import FINISHED_STATES
from nvq.world.blobs import BlobStore, ObjectMismatch
from nvq_runner.protocol import ManifestError, is_hash

__all__ = ["carry", "restore_blobs"]

TABLE = "backup_blobs"
CHUNK = 1024 * 1024


def _needed(db: sqlite3.Connection, store: BlobStore) -> list[str]:
    """Every blob the unfinished jobs' snapshots reach, manifests last."""
    finished = sorted(str(s) for s in FINISHED_STATES)
    marks = ",".join("?" * len(finished))
    rows = db.execute(
        f"SELECT DISTINCT manifest_id FROM jobs WHERE manifest_id IS NOT NULL "
        f"AND state NOT IN ({marks})", finished,
    ).fetchall()
    files: set[str] = set()
    manifests: list[str] = []
    for (mid,) in rows:
        if not is_hash(mid):
            continue
        try:
            files |= store.get_manifest(mid).hashes()
        except (OSError, ValueError, msgspec.DecodeError, ManifestError):
            continue  # gone already: its job cannot start either way
        manifests.append(mid)
    return sorted(files) + sorted(manifests)


def carry(db: sqlite3.Connection, store: BlobStore) -> tuple[int, int]:
    """Copy into `db` (the backup's copy, not the live queue) the blobs its unfinished
    jobs need. Returns (blobs, bytes)."""
    db.execute(f"CREATE TABLE {TABLE} (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)")
    count = total = 0
    for digest in _needed(db, store):
        try:
            handle = store.open(digest)
        except FileNotFoundError:
            continue
        with handle:
            size = store.path(digest).stat().st_size
            rowid = db.execute(
                f"INSERT INTO {TABLE} (sha256, data) VALUES (?, zeroblob(?))", (digest, size),
            ).lastrowid
            assert rowid is not None
            with db.blobopen(TABLE, "data", rowid) as blob:
                while chunk := handle.read(CHUNK):
                    blob.write(chunk[: size - blob.tell()])
        count += 1
        total += size
    db.commit()
    return count, total


def _chunks(db: sqlite3.Connection, rowid: int) -> Iterator[bytes]:
    with db.blobopen(TABLE, "data", rowid, readonly=True) as blob:
        while chunk := blob.read(CHUNK):
            yield chunk


def restore_blobs(db: sqlite3.Connection, store: BlobStore) -> int:
    """Put the blobs a backup carries into `store`, then drop them from `db` (the
    database being restored). Returns how many were missing from the store."""
    present = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,),
    ).fetchone()
    if present is None:
        return 0
    rows = db.execute(f"SELECT rowid, sha256 FROM {TABLE}").fetchall()
    store.ensure()
    put = 0
    for rowid, digest in rows:
        if not is_hash(digest) or store.has(digest):
            continue
        try:
            store.put_chunks(_chunks(db, rowid), expected=digest)
        except ObjectMismatch:
            continue  # a damaged row: that job's start will say its blob is missing
        put += 1
    db.execute(f"DROP TABLE {TABLE}")
    db.commit()
    db.execute("VACUUM")
    return put
