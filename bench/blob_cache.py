"""A job start's working copy from a node's blob cache that already holds many blobs
(older snapshots of a big project): the time `materialise` takes for a 20-file tree
with `--objects` blobs in the cache. It once walked and stat'ed the whole cache at
every start to learn its size. In process, no queue. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from pathlib import Path

from common import emit, machine

from nvq_runner.blobcache import BlobCache
from nvq_runner.protocol import FILE, Entry, Manifest


def start_ms(objects: int, starts: int) -> float:
    root = Path(tempfile.mkdtemp(prefix="nvq-bench-cache-"))
    try:
        cache = BlobCache(root / "cache")
        blobs = []
        for i in range(objects):
            data = f"blob {i}\n".encode()
            digest = hashlib.sha256(data).hexdigest()
            cache.put_bytes(data, digest)
            blobs.append(Entry(f"f{i:03d}.py", FILE, 0o644, len(data), digest))
        tree = Manifest(blobs[:20])
        took = []
        for n in range(starts):
            t0 = time.perf_counter()
            cache.materialise(tree, root / "work" / str(n))
            took.append(time.perf_counter() - t0)
        took.sort()
        return round(took[len(took) // 2] * 1000, 2)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, action="append", help="blobs in the cache")
    ap.add_argument("--starts", type=int, default=20)
    args = ap.parse_args()
    sizes = args.objects or [100, 20_000]
    emit({"bench": "blob_cache", "machine": machine(), "starts": args.starts,
          "materialise_p50_ms": {str(n): start_ms(n, args.starts) for n in sizes}})


if __name__ == "__main__":
    main()
