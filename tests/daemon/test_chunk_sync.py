"""The queue host storing chunked artifact syncs: only missing chunks cross, a file
rewritten mid-sync keeps its previous version, every sync is logged."""

from __future__ import annotations

import random
from pathlib import Path

import anyio

from nvq.daemon.artifacts.chunk_sync import (
    TreeLog,
    batches,
    load_tree,
    read_local,
    record,
    summary,
    take,
)
from nvq.world.blobs import BlobStore
from nvq_runner.artifact_tree import ArtifactTree, encode_tree, scan
from nvq_runner.protocol import ArtifactsTreeReply, ChunkSource

MiB = 1024 * 1024


def reply_for(root: Path, previous: ArtifactTree | None = None) -> ArtifactsTreeReply:
    result = scan(root, previous)
    return ArtifactsTreeReply(
        req=1, job_id=3, tree=encode_tree(result.tree), root=str(root),
        sources=[ChunkSource(d, s.path, s.offset, s.size) for d, s in result.sources.items()],
    )


def test_a_checkpoint_changed_by_one_percent_sends_about_one_percent(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.ensure()
    node = tmp_path / "node"
    node.mkdir()
    rng = random.Random(1)
    ckpt = bytearray(rng.randbytes(20 * MiB))
    (node / "ckpt.pt").write_bytes(ckpt)
    (node / "latest").write_text("1\n")

    async def main() -> None:
        first_id, first, sent, _ = await take(store, reply_for(node), read_local, None)
        assert sent == 20 * MiB + 2
        ckpt[10 * MiB:10 * MiB + 200 * 1024] = rng.randbytes(200 * 1024)
        (node / "ckpt.pt").write_bytes(ckpt)
        second_id, second, sent, _ = await take(store, reply_for(node, first), read_local, first)
        assert 200 * 1024 <= sent <= 2 * MiB  # ≈ 1 % of 20 MiB, plus a chunk each side
        assert load_tree(store, second_id) == second
        log = TreeLog(tmp_path)
        log.append(3, record(reply_for(node), second_id, second, sent, 2, attempt=1, node="n"))
        shown = summary(log.records(3))
        assert shown["syncs"][0]["sent"] == sent
        assert shown["syncs"][0]["dedup_ratio"] >= 10
        assert log.latest(3) is not None and log.latest(3).tree == second_id  # type: ignore[union-attr]
        assert first_id != second_id

    anyio.run(main)


def test_a_file_rewritten_during_the_sync_keeps_its_previous_version(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.ensure()
    node = tmp_path / "node"
    node.mkdir()
    (node / "a.pt").write_bytes(b"one" * 1000)

    async def main() -> None:
        _, first, _, _ = await take(store, reply_for(node), read_local, None)
        (node / "a.pt").write_bytes(b"two" * 1000)
        (node / "b.pt").write_bytes(b"new")
        reply = reply_for(node, first)
        (node / "a.pt").write_bytes(b"three" * 1000)  # while the daemon reads
        _, second, _, _ = await take(store, reply, read_local, first)
        files = {e.path: e for e in second.files()}
        assert files["a.pt"] == first.files()[0]
        assert files["b.pt"].size == 3
        assert not store.missing(sorted(second.hashes()))

    anyio.run(main)


def test_gc_keeps_the_chunks_of_logged_trees_until_the_job_goes(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.ensure()
    node = tmp_path / "node"
    node.mkdir()
    (node / "ckpt.pt").write_bytes(random.Random(3).randbytes(2 * MiB))
    log = TreeLog(tmp_path)

    async def main() -> None:
        reply = reply_for(node)
        tree_id, tree, sent, count = await take(store, reply, read_local, None)
        log.append(5, record(reply, tree_id, tree, sent, count, attempt=1, node="n"))

    anyio.run(main)
    kept = store.gc([], grace=0, live_objects=log.live_objects(store))
    assert kept.objects_freed == 0 and kept.bytes_kept >= 2 * MiB
    log.delete([5])
    freed = store.gc([], grace=0, live_objects=log.live_objects(store))
    assert freed.bytes_freed >= 2 * MiB and store.usage() == (0, 0)


def test_reads_are_cut_into_batches_under_the_limit_keeping_order() -> None:
    items = [ChunkSource(f"h{i}", "f", i * 4, 4) for i in range(5)]
    assert [[s.sha256 for s in b] for b in batches(items, limit=8)] == [
        ["h0", "h1"], ["h2", "h3"], ["h4"]]
    big = [ChunkSource("a", "f", 0, 20), ChunkSource("b", "f", 20, 1)]
    assert [[s.sha256 for s in b] for b in batches(big, limit=8)] == [["a"], ["b"]]
    assert batches([], limit=8) == []
