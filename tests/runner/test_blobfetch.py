"""Fetching snapshot blobs into a node's cache over the daemon link, with the daemon's
side (`nvq.daemon.machines.blobs`) answering: pieces reassembled, bad content refused, a
dropped link asked again."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from nvq.daemon.machines import blobs as serving
from nvq.world.blobs import BlobStore
from nvq_runner import blobfetch
from nvq_runner.blobcache import BlobCache
from nvq_runner.blobfetch import BlobFetcher, FetchError
from nvq_runner.protocol import BlobData, NeedBlobs, RunnerMsg


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_fetch(tmp_path: Path, contents: list[bytes], *, tamper: bool = False,
              drop_first: bool = False) -> tuple[BlobCache, list[NeedBlobs]]:
    store = BlobStore(tmp_path / "blobs")
    for data in contents:
        store.put_bytes(data)
    cache = BlobCache(tmp_path / "cache")
    asked: list[NeedBlobs] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fetcher: BlobFetcher

        def send(msg: RunnerMsg) -> bool:
            assert isinstance(msg, NeedBlobs)
            asked.append(msg)
            if drop_first and len(asked) == 1:
                loop.call_soon(fetcher.connection_lost)
                return True
            for frame in serving.pieces(store, msg):
                if tamper and frame.data:
                    frame = BlobData(req=frame.req, sha256=frame.sha256,
                                     data=b"X" + frame.data[1:], eof=frame.eof)
                loop.call_soon(fetcher.on_data, frame)
            return True

        fetcher = BlobFetcher(cache, send)
        await fetcher.fetch(1, [digest(d) for d in contents], {})

    asyncio.run(main())
    return cache, asked


def test_blobs_arrive_in_pieces_and_land_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serving, "PIECE", 1000)  # many pieces per blob
    contents = [b"a" * 2500, b"", b"tiny"]
    cache, asked = run_fetch(tmp_path, contents)
    assert len(asked) == 1
    for data in contents:
        with cache.open(digest(data)) as handle:
            assert handle.read() == data


def test_content_that_does_not_match_its_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="cannot store"):
        run_fetch(tmp_path, [b"model weights"], tamper=True)


def test_a_dropped_link_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(blobfetch, "RECONNECT_DELAY", 0.0)
    cache, asked = run_fetch(tmp_path, [b"config"], drop_first=True)
    assert len(asked) == 2 and cache.has(digest(b"config"))


def test_a_blob_the_queue_host_lacks_fails_with_a_reason(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path / "cache")
    store = BlobStore(tmp_path / "blobs")

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def send(msg: RunnerMsg) -> bool:
            assert isinstance(msg, NeedBlobs)
            for frame in serving.pieces(store, msg):
                loop.call_soon(fetcher.on_data, frame)
            return True

        fetcher = BlobFetcher(cache, send)
        await fetcher.fetch(1, [digest(b"gone")], {})

    with pytest.raises(FetchError, match="no longer holds"):
        asyncio.run(main())
