"""A reassigned attempt's artifacts on a node: mounted on demand, or restored in full,
with chunks fetched through the runner's real BlobFetcher (frames answered in process
as the daemon would)."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from nvq_runner.artifact_tree import ArtifactTree, scan
from nvq_runner.artifact_view import ArtifactView, LinkChunks
from nvq_runner.blobcache import BlobCache
from nvq_runner.blobfetch import BlobFetcher
from nvq_runner.fusemount import fuse_mounts, unavailable
from nvq_runner.protocol import BlobData, NeedBlobs, RunnerMsg

MiB = 1024 * 1024


def data(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


class QueueHost:
    """Answers NeedBlobs from chunks stored here, as nvq/daemon/machines/blobs.py does."""

    def __init__(self) -> None:
        self.chunks: dict[str, bytes] = {}
        self.sent = 0
        self.fetcher: BlobFetcher | None = None

    def add(self, source: Path) -> ArtifactTree:
        result = scan(source)
        for digest, src in result.sources.items():
            with open(source / src.path, "rb") as h:
                h.seek(src.offset)
                self.chunks[digest] = h.read(src.size)
        return result.tree

    def send(self, msg: RunnerMsg) -> bool:
        assert isinstance(msg, NeedBlobs) and self.fetcher is not None
        loop = asyncio.get_running_loop()
        for digest in msg.hashes:
            self.sent += len(self.chunks[digest])
            loop.call_soon(self.fetcher.on_data, BlobData(
                req=msg.req, sha256=digest, data=self.chunks[digest], eof=True))
        loop.call_soon(self.fetcher.on_data, BlobData(req=msg.req, done=True))
        return True


def previous_attempt(tmp: Path) -> Path:
    before = tmp / "before"
    (before / "ckpt").mkdir(parents=True)
    for i in range(5):
        (before / "ckpt" / f"{i}.pt").write_bytes(data(3 * MiB, i))
    (before / "latest").write_text("4\n")
    return before


async def start(tmp: Path, *, lazy: bool) -> tuple[ArtifactView, QueueHost]:
    host = QueueHost()
    tree = host.add(previous_attempt(tmp))
    fetcher = BlobFetcher(BlobCache(tmp / "cache"), host.send)
    host.fetcher = fetcher
    chunks = LinkChunks(fetcher, asyncio.get_running_loop(), 7, tree.sizes())
    view = ArtifactView(tmp / "job" / "artifacts")
    await asyncio.to_thread(view.open, tree, chunks, lazy=lazy, node="gpu2")
    return view, host


def resume(artifacts: Path) -> bytes:
    """What a resumable training script does first."""
    latest = (artifacts / "latest").read_text().strip()
    return (artifacts / "ckpt" / f"{latest}.pt").read_bytes()


@pytest.mark.skipif(unavailable() is not None, reason=f"FUSE: {unavailable()}")
def test_mounted_view_fetches_what_the_job_reads_and_syncs_what_it_writes(
    tmp_path: Path,
) -> None:
    asyncio.run(mounted(tmp_path))


async def mounted(tmp_path: Path) -> None:
    view, host = await start(tmp_path, lazy=True)
    try:
        assert view.mode == "mounted" and view.note == ""
        assert host.sent == 0
        assert await asyncio.to_thread(resume, view.directory) == data(3 * MiB, 4)
        assert 3 * MiB <= host.sent < 3 * MiB + 1024
        assert view.fetched_bytes == host.sent

        def train_on() -> None:
            (view.directory / "ckpt" / "5.pt").write_bytes(data(MiB, 5))
            (view.directory / "latest").write_text("5\n")
            os.unlink(view.directory / "ckpt" / "0.pt")

        await asyncio.to_thread(train_on)
        live = await asyncio.to_thread(view.snapshot, None)
        assert live.bytes_read == MiB + 2
    finally:
        await asyncio.to_thread(view.close)
    assert fuse_mounts(tmp_path) == []
    after = await asyncio.to_thread(view.snapshot, live.tree)
    assert after.bytes_read == 0
    assert sorted(e.path for e in after.tree.files()) == [
        "ckpt/1.pt", "ckpt/2.pt", "ckpt/3.pt", "ckpt/4.pt", "ckpt/5.pt", "latest"]
    # a runner started afresh finds the same from the files on disk
    again = ArtifactView(view.directory)
    assert (await asyncio.to_thread(again.snapshot, None)).tree.files() == after.tree.files()


def test_without_fuse_everything_is_restored_first_with_a_note(tmp_path: Path) -> None:
    asyncio.run(restored(tmp_path))


async def restored(tmp_path: Path) -> None:
    view, host = await start(tmp_path, lazy=False)
    assert view.mode == "restored"
    assert view.note == "artifacts restored in full: FUSE not available on gpu2 " \
        "(lazy_artifacts = false)"
    assert host.sent == 15 * MiB + 2
    assert resume(view.directory) == data(3 * MiB, 4)
    previous = host.add(tmp_path / "before")
    assert (await asyncio.to_thread(view.snapshot, previous)).bytes_read == 0
