"""The whole path of a job's code: snapshot on the submitting machine, blob store on
the queue host, blob cache on the node, working copy in the job's directory."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from nvq.world.blobs import BlobStore
from nvq.world.snapshot import cwd_subdir, store_snapshot, take_snapshot
from nvq_runner.blobcache import BlobCache
from tests.world.conftest import write


def ship(store: BlobStore, cache: BlobCache, manifest_id: str, dest: Path) -> list[str]:
    """What the runner does with the node's connection: fetch the manifest, then what
    the cache lacks, then build. Returns the blobs that had to cross."""
    if cache.load_manifest(manifest_id) is None:
        cache.put_bytes(store.read_bytes(manifest_id), manifest_id)
    manifest = cache.load_manifest(manifest_id)
    assert manifest is not None
    fetched: list[str] = []
    while missing := cache.materialise(manifest, dest):
        for digest in missing:
            with store.open(digest) as handle:
                cache.put_chunks(iter(functools.partial(handle.read, 65536), b""), digest)
        fetched += missing
    return fetched


def test_a_job_runs_the_code_as_it_was_submitted(project: Path, tmp_path: Path) -> None:
    write(project / "src" / "train.py", "print(open('../config.yaml').read().strip())\n")
    store = BlobStore(tmp_path / "queue" / "blobs")
    cache = BlobCache(tmp_path / "node" / "cache")
    snapshot = take_snapshot(project)
    manifest_id = store_snapshot(snapshot, store)
    write(project / "config.yaml", "lr: 999\n")  # edited while the job waits

    work = tmp_path / "node" / "jobs" / "1" / "work"
    fetched = ship(store, cache, manifest_id, work)
    assert len(fetched) == len(snapshot.manifest.hashes())
    subdir = cwd_subdir(project, project / "src")
    out = subprocess.run([sys.executable, "train.py"], cwd=work / subdir,
                         capture_output=True, text=True, check=True)
    assert out.stdout == "lr: 0.1\n"
    assert not (work / ".venv").exists() and not (work / "data").exists()
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")) == [
        e.path for e in snapshot.manifest.entries
    ]

    # the next job of the sweep needs nothing new on this node
    assert ship(store, cache, manifest_id, tmp_path / "node" / "jobs" / "2" / "work") == []
    assert os.readlink(work / "host-link") == "/etc/hostname"
