"""A job's code on its way: snapshot + store of a generated project, first time and
again unchanged, and the node side (fetch into the blob cache, build the working copy)
cold and warm.

The project is what a training repository looks like: a few thousand small source and
config files, a handful of multi-megabyte assets, and what must be left out (a
virtual environment, ignored outputs, git's directory), `--mib` in all that is taken.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from common import emit, machine

from nvq.world.blobs import BlobStore
from nvq.world.snapshot import store_snapshot, take_snapshot
from nvq_runner.blobcache import BlobCache

T = TypeVar("T")


def generate(root: Path, mib: int, small_files: int) -> None:
    rng = random.Random(7)
    small_total = 0
    for i in range(small_files):
        data = rng.randbytes(rng.randint(200, 8000))
        path = root / f"pkg{i % 40}" / f"mod{i % 7}" / f"file{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        small_total += len(data)
    remaining = mib * 1024 * 1024 - small_total
    assets = 20
    for i in range(assets):
        path = root / "assets" / f"asset{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(remaining // assets))
    (root / ".gitignore").write_text("outputs/\n*.ckpt\n")
    for leftover in ("outputs/run1/log.txt", "model.ckpt", ".venv/lib/site.py", ".git/HEAD"):
        path = root / leftover
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(1024 * 1024))
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    # old mtimes: the stat cache trusts what was not written moments ago
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), (1_600_000_000, 1_600_000_000))


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    result = fn()
    return result, round(time.perf_counter() - started, 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--files", type=int, default=5000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-snapshot-"))
    try:
        project = tmp / "project"
        generate(project, args.mib, args.files)
        store = BlobStore(tmp / "home" / "blobs")
        statcache = tmp / "home" / "blobs" / "statcache"

        snap, first_snapshot = timed(lambda: take_snapshot(project, stat_cache=statcache))
        manifest_id, first_store = timed(lambda: store_snapshot(snap, store))
        again, again_snapshot = timed(lambda: take_snapshot(project, stat_cache=statcache))
        _, again_store = timed(lambda: store_snapshot(again, store))

        cache = BlobCache(tmp / "node" / "cache")

        def fetch_and_build(dest: Path) -> None:
            while missing := cache.materialise(snap.manifest, dest):
                for digest in missing:
                    with store.open(digest) as handle:
                        cache.put_chunks(iter(partial(handle.read, 1 << 20), b""), digest)

        _, cold = timed(lambda: fetch_and_build(tmp / "node" / "jobs" / "1" / "work"))
        _, warm = timed(lambda: fetch_and_build(tmp / "node" / "jobs" / "2" / "work"))
        emit({
            "bench": "snapshot",
            "machine": machine(),
            "project_mib": round(snap.size / 1024 / 1024, 1),
            "files": len(snap.manifest.files()),
            "snapshot_first_s": first_snapshot,
            "store_first_s": first_store,
            "snapshot_unchanged_s": again_snapshot,
            "store_unchanged_s": again_store,
            "rehashed_unchanged": again.hashed,
            "blobs_stored": store.usage()[0],
            "same_manifest": manifest_id == store_snapshot(again, store),
            "materialise_cold_s": cold,
            "materialise_warm_s": warm,
            "hard_links": os.geteuid() != 0,
        })
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
