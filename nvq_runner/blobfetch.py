"""Fetching snapshot blobs the node's cache lacks from the queue host, over the
daemon's own connection: `NeedBlobs` out, `BlobData` pieces back, each blob written to
a temporary file of the cache and adopted once its hash checks.

Requests go in batches of a bounded size, one at a time per job, so the daemon never
holds more than a batch of one job's snapshot in its send queue. Lives on the runner's
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Optional

from .blobcache import BlobCache, ObjectMismatch
from .errors import NvqRunnerError
from .protocol import BlobData, NeedBlobs, RunnerMsg

BATCH_BYTES = 32 * 1024 * 1024
BATCH_TIMEOUT = 600.0  # seconds for one batch to arrive
# A link that drops mid-fetch is usually back within seconds: ask again on the new one
# for this long before the job fails.
RECONNECT_TRIES = 60
RECONNECT_DELAY = 2.0


class FetchError(NvqRunnerError):
    """The blobs could not be fetched; the message is for the user."""


class Disconnected(FetchError):
    """No daemon connection (now, or any more during the fetch): worth retrying."""


@dataclass(eq=False)
class _Request:
    wanted: set[str]
    done: asyncio.Future[None]
    got: set[str] = field(default_factory=set)
    sha: str = ""
    temp: Optional[Path] = None
    handle: Optional[BinaryIO] = None

    def close_temp(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        if self.temp is not None:
            with contextlib.suppress(OSError):
                self.temp.unlink()
            self.temp = None


def batches(hashes: list[str], sizes: Mapping[str, int], limit: int = BATCH_BYTES) -> list[list[str]]:
    out: list[list[str]] = []
    current: list[str] = []
    total = 0
    for digest in hashes:
        size = sizes.get(digest, 0)
        if current and total + size > limit:
            out.append(current)
            current, total = [], 0
        current.append(digest)
        total += size
    if current:
        out.append(current)
    return out


class BlobFetcher:
    def __init__(self, cache: BlobCache, send: Callable[[RunnerMsg], bool]) -> None:
        self.cache = cache
        self._send = send
        self._ids = itertools.count(1)
        self._requests: dict[int, _Request] = {}

    async def fetch(self, job_id: int, hashes: list[str], sizes: Mapping[str, int]) -> None:
        for batch in batches(hashes, sizes):
            for attempt in range(RECONNECT_TRIES):
                try:
                    await self._fetch_batch(job_id, [h for h in batch if not self.cache.has(h)])
                    break
                except Disconnected:
                    if attempt == RECONNECT_TRIES - 1:
                        raise
                    await asyncio.sleep(RECONNECT_DELAY)

    async def _fetch_batch(self, job_id: int, hashes: list[str]) -> None:
        if not hashes:
            return
        req = next(self._ids)
        request = _Request(set(hashes), asyncio.get_running_loop().create_future())
        self._requests[req] = request
        try:
            if not self._send(NeedBlobs(req=req, job_id=job_id, hashes=hashes)):
                raise Disconnected("not connected to the queue host")
            try:
                await asyncio.wait_for(asyncio.shield(request.done), BATCH_TIMEOUT)
            except TimeoutError:
                raise FetchError(
                    f"the queue host sent no snapshot files for {BATCH_TIMEOUT:g} s"
                ) from None
        finally:
            self._requests.pop(req, None)
            request.close_temp()

    def on_data(self, msg: BlobData) -> None:
        request = self._requests.get(msg.req)
        if request is None or request.done.done():
            return
        try:
            self._take(request, msg)
        except (OSError, FetchError, ObjectMismatch) as exc:
            request.close_temp()
            error = exc if isinstance(exc, FetchError) else FetchError(
                f"cannot store a snapshot file on this node: {exc}")
            request.done.set_exception(error)

    def _take(self, request: _Request, msg: BlobData) -> None:
        if msg.error is not None:
            raise FetchError(msg.error)
        if msg.done:
            lacking = request.wanted - request.got
            if lacking:
                raise FetchError(f"the queue host lacks {len(lacking)} snapshot file(s)")
            request.done.set_result(None)
            return
        if msg.sha256 not in request.wanted:
            raise FetchError(f"the queue host sent an unasked-for blob {msg.sha256[:12]}")
        if request.sha != msg.sha256:
            request.close_temp()
            request.sha = msg.sha256
            request.temp = self.cache.temp_file()
            fd = os.open(request.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            request.handle = os.fdopen(fd, "wb")
        assert request.handle is not None and request.temp is not None
        request.handle.write(msg.data)
        if msg.eof:
            request.handle.close()
            request.handle = None
            temp, request.temp, request.sha = request.temp, None, ""
            self.cache.adopt(temp, msg.sha256)
            request.got.add(msg.sha256)

    def connection_lost(self) -> None:
        for request in self._requests.values():
            if not request.done.done():
                request.close_temp()
                request.done.set_exception(
                    Disconnected("the connection to the queue host dropped while "
                                 "fetching the snapshot"))
