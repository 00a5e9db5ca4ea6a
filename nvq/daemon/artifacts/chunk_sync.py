"""The queue host's side of a chunked artifacts sync: given the tree a runner described
(ArtifactsTreeReply), store the chunks the blob store lacks, read as byte ranges of the
node's files over SFTP, over the runner link where SFTP cannot reach them (a pilot:
link_reads.py), or from disk for the local node; and record the sync.

A file rewritten between the runner's scan and our read no longer hashes to what the
tree says: its previous version (if the last tree had one) stands in, and the next
sync takes the new one. So a stored tree always has all of its chunks.

Each sync is one line of `$NVQ_HOME/artifact-trees/<job id>.jsonl`: which tree, how
many bytes it describes and how many crossed, so `job show` can say what each sync
cost and how much deduplication saved. The newest line is the tree the job's next
attempt mounts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from nvq.world.blobs import BlobStore
from nvq_runner.artifact_tree import ArtifactTree, TreeEntry, decode_tree, encode_tree
from nvq_runner.protocol import ArtifactsTreeReply, ChunkSource

# (path, [(offset, size)]) → the bytes of each range, in order
ReadRanges = Callable[[str, list[tuple[int, int]]], Awaitable[list[bytes]]]
# Bytes asked for in one read: what the queue host holds of a file at a time, and under
# the frame limit where the ranges come over the runner link.
READ_BATCH = 16 * 1024 * 1024


class SyncRecord(msgspec.Struct, frozen=True):
    time: float
    attempt: int
    node: str
    tree: str
    files: int
    bytes: int  # what the tree describes
    sent: int  # what crossed from the node for this sync
    chunks: int
    chunks_sent: int
    fetched: int = 0  # what the attempt pulled from the queue host (on demand or in full)
    mode: str = "plain"
    note: str = ""

    @property
    def dedup_ratio(self) -> float:
        """Bytes described per byte sent (∞ shown as the total when nothing was sent)."""
        return self.bytes / self.sent if self.sent else float(self.bytes or 1)


class TreeLog:
    def __init__(self, home: Path) -> None:
        self.root = home / "artifact-trees"

    def path(self, job_id: int) -> Path:
        return self.root / f"{job_id}.jsonl"

    def append(self, job_id: int, record: SyncRecord) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path(job_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "ab") as handle:
            handle.write(msgspec.json.encode(record) + b"\n")

    def set_aside_path(self, job_id: int, attempt: int) -> Path:
        return self.root / "set-aside" / f"{job_id}-attempt-{attempt}.jsonl"

    def set_aside(self, job_id: int, attempt: int) -> None:
        """`requeue --artifacts fresh`: the next attempt starts with no tree, and the
        old log is kept (its trees stay live for gc) until the job is purged."""
        if not self.path(job_id).exists():
            return
        dest = self.set_aside_path(job_id, attempt)
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.replace(self.path(job_id), dest)

    def records(self, job_id: int) -> list[SyncRecord]:
        return self._read(self.path(job_id))

    def _read(self, path: Path) -> list[SyncRecord]:
        out: list[SyncRecord] = []
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_bytes().splitlines():
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    out.append(msgspec.json.decode(line, type=SyncRecord))
        return out

    def latest(self, job_id: int) -> SyncRecord | None:
        records = self.records(job_id)
        return records[-1] if records else None

    def live_trees(self) -> list[str]:
        """Every tree named here (gc keeps them and their chunks)."""
        trees: list[str] = []
        if self.root.is_dir():
            for item in [*self.root.glob("*.jsonl"), *self.root.glob("set-aside/*.jsonl")]:
                trees += [r.tree for r in self._read(item)]
        return trees

    def live_objects(self, store: BlobStore) -> set[str]:
        """Every tree logged here and every chunk they name: gc keeps them."""
        live: set[str] = set()
        for tree_id in set(self.live_trees()):
            live.add(tree_id)
            tree = load_tree(store, tree_id)
            if tree is not None:
                live |= tree.hashes()
        return live

    def delete(self, job_ids: list[int]) -> None:
        for job_id in job_ids:
            self.path(job_id).unlink(missing_ok=True)
            for old in self.root.glob(f"set-aside/{job_id}-attempt-*.jsonl"):
                old.unlink(missing_ok=True)


def load_tree(store: BlobStore, tree_id: str) -> ArtifactTree | None:
    try:
        return decode_tree(store.read_bytes(tree_id))
    except (OSError, ValueError, msgspec.DecodeError):
        return None


async def take(
    store: BlobStore, reply: ArtifactsTreeReply, read: ReadRanges,
    previous: ArtifactTree | None,
) -> tuple[str, ArtifactTree, int, int]:
    """Store what `reply` needs; returns (tree id, tree stored, bytes sent, chunks sent)."""
    tree = decode_tree(reply.tree)
    wanted = await anyio.to_thread.run_sync(store.missing, sorted(tree.hashes()))
    sources = {s.sha256: s for s in reply.sources}
    by_file: dict[str, list[ChunkSource]] = defaultdict(list)
    lost: set[str] = set()
    for digest in wanted:
        source = sources.get(digest)
        if source is None:
            lost.add(digest)
        else:
            by_file[source.path].append(source)
    sent = count = 0
    for rel, items in sorted(by_file.items()):
        items.sort(key=lambda s: s.offset)
        for batch in batches(items):
            try:
                pieces = await read(f"{reply.root}/{rel}", [(s.offset, s.size) for s in batch])
            except OSError:
                lost.update(s.sha256 for s in batch)
                continue
            for source, data in zip(batch, pieces, strict=True):
                if hashlib.sha256(data).hexdigest() != source.sha256:
                    lost.add(source.sha256)  # rewritten since the scan
                    continue
                await anyio.to_thread.run_sync(store.put_bytes, data, source.sha256)
                sent += len(data)
                count += 1
    if lost:
        tree = _without(tree, lost, previous)
    tree_id = await anyio.to_thread.run_sync(store.put_bytes, encode_tree(tree))
    return tree_id, tree, sent, count


def batches(items: list[ChunkSource], limit: int = READ_BATCH) -> list[list[ChunkSource]]:
    """`items` in order, cut into reads of at most `limit` bytes (or one chunk)."""
    out: list[list[ChunkSource]] = []
    size = 0
    for item in items:
        if not out or size + item.size > limit:
            out.append([])
            size = 0
        out[-1].append(item)
        size += item.size
    return out


def _without(tree: ArtifactTree, lost: set[str], previous: ArtifactTree | None) -> ArtifactTree:
    """The tree with each file that has a lost chunk replaced by its previous version,
    or left out."""
    before = previous.by_path() if previous is not None else {}
    entries: list[TreeEntry] = []
    for entry in tree.entries:
        if any(c.sha256 in lost for c in entry.chunks):
            old = before.get(entry.path)
            if old is None or old.kind != entry.kind:
                continue
            entry = old
        entries.append(entry)
    return ArtifactTree(entries)


def record(reply: ArtifactsTreeReply, tree_id: str, tree: ArtifactTree, sent: int,
           chunks_sent: int, *, attempt: int, node: str) -> SyncRecord:
    return SyncRecord(
        time=time.time(), attempt=attempt, node=node, tree=tree_id,
        files=len(tree.files()), bytes=tree.total_size(), sent=sent,
        chunks=sum(len(e.chunks) for e in tree.files()), chunks_sent=chunks_sent,
        fetched=reply.fetched_bytes, mode=reply.mode, note=reply.note,
    )


# ------------------------------------------------------------ reading ranges


async def read_local(path: str, ranges: list[tuple[int, int]]) -> list[bytes]:
    def read() -> list[bytes]:
        with open(path, "rb") as handle:
            return [os.pread(handle.fileno(), size, offset) for offset, size in ranges]

    return await anyio.to_thread.run_sync(read)


def sftp_reader(sftp: Any) -> ReadRanges:
    async def read(path: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        try:
            async with sftp.open(path, "rb") as handle:
                return [bytes(await handle.read(size, offset)) for offset, size in ranges]
        except Exception as exc:  # asyncssh's SFTPError is not an OSError
            raise OSError(str(exc)) from exc

    return read


def summary(records: list[SyncRecord]) -> dict[str, Any]:
    """For `job show`: per sync, bytes sent and the dedup ratio; the restore's note."""
    notes = list(dict.fromkeys(r.note for r in records if r.note))
    return {
        "syncs": [
            {"time": r.time, "attempt": r.attempt, "node": r.node, "files": r.files,
             "bytes": r.bytes, "sent": r.sent, "dedup_ratio": round(r.dedup_ratio, 1),
             "fetched": r.fetched, "mode": r.mode}
            for r in records
        ],
        "notes": notes,
    }
