"""A job's prerequisites' artifacts at `$NVQ_INPUTS/<id>/`: read-only, mounted on
demand where FUSE is available and restored in full where it is not, with chunks
fetched through the runner's real BlobFetcher (answered in process as the daemon
would)."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
from pathlib import Path

import pytest

from nvq_runner.artifact_tree import encode_tree
from nvq_runner.blobcache import BlobCache
from nvq_runner.blobfetch import BlobFetcher
from nvq_runner.fusemount import fuse_mounts, unavailable
from nvq_runner.input_views import InputsError, InputViews
from tests.runner.test_artifact_view import QueueHost


def prep_output(tmp: Path) -> Path:
    out = tmp / "prep"
    (out / "shards").mkdir(parents=True)
    (out / "shards" / "0.bin").write_bytes(os.urandom(300_000))
    (out / "vocab.txt").write_text("a b c\n")
    return out


async def give(tmp: Path, *, lazy: bool) -> tuple[InputViews, Path, QueueHost]:
    host = QueueHost()
    tree = host.add(prep_output(tmp))

    fetcher = BlobFetcher(BlobCache(tmp / "cache"), host.send)
    host.fetcher = fetcher
    data = encode_tree(tree)
    tree_id = hashlib.sha256(data).hexdigest()
    host.chunks[tree_id] = data
    views = InputViews(fetcher)
    root = tmp / "job" / "inputs"
    await views.prepare(9, {"7": tree_id, "8": ""}, root, lazy=lazy, node="gpu2")
    return views, root, host


def check_read_only(root: Path) -> None:
    assert (root / "7" / "vocab.txt").read_text() == "a b c\n"
    assert len((root / "7" / "shards" / "0.bin").read_bytes()) == 300_000
    assert list((root / "8").iterdir()) == []  # synced nothing: an empty folder
    if os.geteuid() != 0 or fuse_mounts(root / "7"):
        with pytest.raises(OSError) as caught:
            (root / "7" / "new.txt").write_text("x")
        assert caught.value.errno in (errno.EROFS, errno.EACCES)


@pytest.mark.skipif(unavailable() is not None, reason="FUSE not available here")
def test_inputs_are_mounted_read_only_and_fetched_on_demand(tmp_path: Path) -> None:
    async def run() -> None:
        views, root, host = await give(tmp_path, lazy=True)
        try:
            assert fuse_mounts(root / "7") == [str(root / "7")]
            assert host.sent < 300_000  # listing fetched no file's chunks
            await asyncio.to_thread(check_read_only, root)
            assert not views.notes
        finally:
            await views.close(9)
        assert fuse_mounts(root) == []

    asyncio.run(run())


def test_inputs_restored_in_full_where_fuse_is_off(tmp_path: Path) -> None:
    async def run() -> None:
        views, root, _host = await give(tmp_path, lazy=False)
        assert fuse_mounts(root) == []
        await asyncio.to_thread(check_read_only, root)
        assert (root / "7" / "vocab.txt").stat().st_mode & 0o222 == 0
        assert "inputs restored in full" in views.notes[9]
        # the next attempt takes the read-only copy away and gives it again
        await views.prepare(9, {"7": ""}, root, lazy=False, node="gpu2")
        assert sorted(p.name for p in root.iterdir()) == ["7"]

    asyncio.run(run())


def test_a_bad_input_name_fails_the_start(tmp_path: Path) -> None:
    async def run() -> None:
        views = InputViews(BlobFetcher(BlobCache(tmp_path / "cache"), lambda m: True))
        with pytest.raises(InputsError, match="not a job id"):
            await views.prepare(9, {"../x": ""}, tmp_path / "inputs", lazy=False, node="n")

    asyncio.run(run())
