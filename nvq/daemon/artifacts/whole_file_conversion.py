"""The end of whole-file artifacts: a queue from before chunk trees kept each job's
`$NVQ_ARTIFACTS` as plain files under `$NVQ_HOME/artifacts/<job id>/` (pulled over
SFTP, with the node's modes and mtimes). The daemon's first start on such a home turns
each into a chunk tree in the blob store with one sync record, so `job artifacts`, a
restore on the next node and `job show` all read trees from then on.

Crash-safe and run once:
* a job whose tree log exists is done (or its trees superseded its files already, as
  every read preferred the tree): it is skipped, so a rerun never records it twice;
* chunks and the tree go into the blob store first (content-addressed: storing one
  again changes nothing), then the job's log is written whole and renamed into place,
  so a kill leaves either no log (the next start converts it again) or the whole one;
* `artifact-trees/whole-files-converted` is written after every job: later starts do
  not look again.
The files stay where they were: they are the tree's checkout until `job artifacts`
checks it out afresh. A `.name.nvq-part` file (a copy the old sync never finished)
is left out of the tree.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec

from nvq.daemon.artifacts.chunk_sync import SyncRecord, TreeLog
from nvq.daemon.core.state import State
from nvq.daemon.machines.blobs import blob_store
from nvq_runner.artifact_tree import ArtifactTree, encode_tree, scan

log = logging.getLogger("nvq.artifacts")
DONE = "whole-files-converted"


@dataclass(frozen=True)
class Owner:
    """What the sync record says of the job whose files these are."""

    attempt: int
    node: str


def done_marker(home: Path) -> Path:
    return TreeLog(home).root / DONE


def waiting(home: Path) -> list[int]:
    """Jobs with whole files stored and no tree log, oldest first; none once done."""
    root = home / "artifacts"
    if done_marker(home).exists() or not root.is_dir():
        return []
    logs = TreeLog(home)
    ids = [int(d.name) for d in root.iterdir() if d.name.isdigit() and d.is_dir()]
    return sorted(i for i in ids if not logs.path(i).exists())


def _partial(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.startswith(".") and name.endswith(".nvq-part")


def convert_job(home: Path, job_id: int, owner: Owner) -> str:
    """Store job `job_id`'s files as a tree and log it; returns the tree id ("" when
    the directory holds no file: nothing to keep, as the old restore pushed nothing)."""
    files = home / "artifacts" / str(job_id)
    found = scan(files)
    kept = [e for e in found.tree.entries if not _partial(e.path)]
    tree = ArtifactTree(kept)
    if not tree.files():
        return ""
    store = blob_store(home)
    wanted = set(store.missing(sorted(tree.hashes())))
    for digest in sorted(wanted):
        source = found.sources[digest]
        with open(files / source.path, "rb") as handle:
            data = os.pread(handle.fileno(), source.size, source.offset)
        store.put_bytes(data, digest)
    tree_id = store.put_bytes(encode_tree(tree))
    size = tree.total_size()
    record = SyncRecord(
        time=max(e.mtime_ns for e in tree.files()) / 1e9, attempt=owner.attempt,
        node=owner.node, tree=tree_id, files=len(tree.files()), bytes=size, sent=size,
        chunks=sum(len(e.chunks) for e in tree.files()), chunks_sent=len(wanted),
    )
    _write_log(TreeLog(home), job_id, record)
    return tree_id


def _write_log(logs: TreeLog, job_id: int, record: SyncRecord) -> None:
    """The job's first log, whole or not at all."""
    logs.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = logs.root / f".{job_id}.jsonl.converting"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(msgspec.json.encode(record) + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, logs.path(job_id))


def finish(home: Path) -> None:
    marker = done_marker(home)
    marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)


async def convert_stored(state: State) -> int:
    """At the daemon's start, before any link: every job's whole files become a tree.
    Returns the jobs converted."""
    home = state.home
    ids = await anyio.to_thread.run_sync(waiting, home)
    if not ids and done_marker(home).exists():
        return 0
    converted = 0
    for job_id in ids:
        job = await state.store.job(job_id)
        if job is None:
            continue  # purged, its files left behind: nothing reads them
        owner = Owner(job.attempt, job.node or "")
        try:
            tree_id = await anyio.to_thread.run_sync(convert_job, home, job_id, owner)
        except (OSError, ValueError) as exc:  # a path no tree may hold: the files stay
            log.error("job %s: stored artifact files not converted: %s", job_id, exc)
            continue
        if tree_id:
            converted += 1
            log.info("job %s: stored artifact files kept as tree %s", job_id, tree_id[:12])
    await anyio.to_thread.run_sync(finish, home)
    if converted:
        log.info("converted the stored artifact files of %d jobs into chunk trees", converted)
    return converted

