"""Restart delay of a reassigned job with a large artifacts directory: restored in full
before the job starts (the eager path) against mounted on demand (FUSE), and what the
job's first read of its newest checkpoint then costs.

The previous attempt left `--files` checkpoints of `--mib` MiB each (random data) and a
`latest` pointer in the queue host's blob store (as a chunk tree). The node side is the
runner's own code: ArtifactView over a real BlobFetcher with a cold blob cache, its
NeedBlobs requests answered by the daemon's serving code (nvq/daemon/machines/blobs.py) from
that store, in process (no SSH hop: the figures are the floor of a real link). The
"job" reads `latest`, then the checkpoint it names. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from pathlib import Path

from common import emit, machine

from nvq.daemon.machines.blobs import pieces
from nvq.world.blobs import BlobStore
from nvq_runner.artifact_tree import ArtifactTree, scan
from nvq_runner.artifact_view import ArtifactView, LinkChunks
from nvq_runner.blobcache import BlobCache
from nvq_runner.blobfetch import BlobFetcher
from nvq_runner.protocol import NeedBlobs, RunnerMsg

MiB = 1024 * 1024


def previous_attempt(root: Path, files: int, mib: int, store: BlobStore) -> ArtifactTree:
    rng = random.Random(1)
    (root / "ckpt").mkdir(parents=True)
    for i in range(files):
        with open(root / "ckpt" / f"{i}.pt", "wb") as out:
            for _ in range(mib // 64):
                out.write(rng.randbytes(64 * MiB))
            out.write(rng.randbytes((mib % 64) * MiB))
    (root / "latest").write_text(f"{files - 1}\n")
    result = scan(root)
    for digest, src in result.sources.items():
        with open(root / src.path, "rb") as handle:
            handle.seek(src.offset)
            store.put_bytes(handle.read(src.size), digest)
    return result.tree


def resume(artifacts: Path) -> int:
    latest = (artifacts / "latest").read_text().strip()
    with open(artifacts / "ckpt" / f"{latest}.pt", "rb") as handle:
        return sum(len(block) for block in iter(lambda: handle.read(MiB), b""))


async def attempt(tmp: Path, store: BlobStore, tree: ArtifactTree, lazy: bool) -> dict[str, float]:
    shutil.rmtree(tmp / "node", ignore_errors=True)
    fetcher: BlobFetcher | None = None

    def send(msg: RunnerMsg) -> bool:
        assert isinstance(msg, NeedBlobs) and fetcher is not None

        async def answer() -> None:
            for frame in await asyncio.to_thread(pieces, store, msg):
                fetcher.on_data(frame)  # type: ignore[union-attr]

        asyncio.get_running_loop().create_task(answer())
        return True

    fetcher = BlobFetcher(BlobCache(tmp / "node" / "cache", max_bytes=64 * 1024**3), send)
    chunks = LinkChunks(fetcher, asyncio.get_running_loop(), 1, tree.sizes())
    view = ArtifactView(tmp / "node" / "jobs" / "1" / "artifacts")
    started = time.perf_counter()
    await asyncio.to_thread(view.open, tree, chunks, lazy=lazy, node="bench")
    opened = time.perf_counter()
    size = await asyncio.to_thread(resume, view.directory)
    read = time.perf_counter()
    await asyncio.to_thread(view.close)
    return {
        "restart_delay_s": round(opened - started, 3),
        "first_checkpoint_read_s": round(read - opened, 3),
        "fetched_mib": round(chunks.fetched_bytes / MiB, 1),
        "read_mib": round(size / MiB, 1),
        "mode": view.mode,  # type: ignore[dict-item]
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nvq-bench-lazy-"))
    try:
        store = BlobStore(tmp / "blobs")
        store.ensure()
        tree = previous_attempt(tmp / "before", args.files, args.mib, store)
        eager = asyncio.run(attempt(tmp, store, tree, lazy=False))
        on_demand = asyncio.run(attempt(tmp, store, tree, lazy=True))
        emit({
            "bench": "lazy_artifacts", **machine(),
            "artifacts_mib": args.files * args.mib, "files": args.files,
            "eager": eager, "on_demand": on_demand,
        })
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
