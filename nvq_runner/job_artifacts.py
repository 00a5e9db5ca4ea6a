"""The runner's part in chunked artifacts: before an attempt starts, give it the
previous attempt's tree at `$NVQ_ARTIFACTS` (mounted on demand, or restored in full);
describe the directory when the daemon asks for a sync; notice `.sync`; unmount when
the attempt ends; and at start-up, take down mounts a killed runner left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from .artifact_tree import ArtifactTree, TreeError, decode_tree, encode_tree
from .artifact_view import ArtifactView, LinkChunks
from .blobfetch import BlobFetcher, FetchError
from .chunk_reads import read_chunks
from .errors import NvqRunnerError
from .protocol import (
    ArtifactsTreeQuery,
    ArtifactsTreeReply,
    ChunkBytes,
    ChunkSource,
    ReadChunks,
)

log = logging.getLogger(__name__)


class ArtifactsError(NvqRunnerError):
    """The attempt cannot get its previous artifacts; the message is for the user."""


class JobArtifacts:
    def __init__(self, fetcher: BlobFetcher) -> None:
        self.fetcher = fetcher
        self.views: dict[int, ArtifactView] = {}
        self.synced: dict[int, ArtifactTree] = {}  # the last tree described, per job
        self.closed: dict[int, ArtifactView] = {}  # unmounted; their final sync to come

    @staticmethod
    def clean_stale(jobs_root: Path) -> list[str]:
        from .fusemount import clean_stale

        cleaned = clean_stale(jobs_root)
        for point in cleaned:
            log.warning("took down the artifacts mount a previous runner left: %s", point)
        return cleaned

    async def _tree(self, job_id: int, tree_id: str) -> ArtifactTree:
        cache = self.fetcher.cache
        if not cache.has(tree_id):
            await self.fetcher.fetch(job_id, [tree_id], {})
        return decode_tree(cache.path(tree_id).read_bytes())

    async def prepare(self, job_id: int, tree_id: str, directory: Path, *, lazy: bool,
                      node: str, owner: tuple[int, int] | None = None) -> ArtifactView:
        """Blocks the attempt's start only as long as the mount (or the full restore).
        `owner`: the job's (uid, gid) when it runs as another user than the runner."""
        view = ArtifactView(directory, owner)
        try:
            tree = await self._tree(job_id, tree_id)
            chunks = LinkChunks(self.fetcher, asyncio.get_running_loop(), job_id, tree.sizes())
            await asyncio.to_thread(view.open, tree, chunks, lazy=lazy, node=node)
        except (FetchError, TreeError, OSError) as exc:
            raise ArtifactsError(f"cannot restore the job's artifacts: {exc}") from None
        self.closed.pop(job_id, None)
        self.views[job_id] = view
        self.synced[job_id] = tree
        if view.note:
            log.info("job %s: %s", job_id, view.note)
        return view

    async def remount(self, job_id: int, directory: Path) -> None:
        """A job that outlived its runner: mount its artifacts again (the tree's part as
        of its last sync, over everything it wrote)."""
        view = ArtifactView(directory, job_dir_owner(directory.parent))
        loop = asyncio.get_running_loop()

        def chunks_for(tree: ArtifactTree) -> LinkChunks:
            return LinkChunks(self.fetcher, loop, job_id, tree.sizes())

        try:
            if await asyncio.to_thread(view.remount, chunks_for):
                self.views[job_id] = view
                log.info("job %s: artifacts mounted again at %s", job_id, directory)
        except (OSError, TreeError, ValueError) as exc:
            log.warning("job %s: cannot mount its artifacts again: %s", job_id, exc)

    def view(self, job_id: int, directory: Path) -> ArtifactView:
        return self.views.get(job_id) or self.closed.get(job_id) or ArtifactView(directory)

    async def read(self, msg: ReadChunks, directory: Path) -> ChunkBytes:
        """Byte ranges of the files the last scan found (ranges the daemon lacks)."""
        root = self.view(msg.job_id, directory).read_root()
        return await asyncio.to_thread(read_chunks, root, msg)

    async def describe(self, msg: ArtifactsTreeQuery, directory: Path) -> ArtifactsTreeReply:
        view = self.view(msg.job_id, directory)
        previous = self.synced.get(msg.job_id)
        if previous is None and msg.known and self.fetcher.cache.has(msg.known):
            with contextlib.suppress(OSError, TreeError, ValueError):
                previous = decode_tree(self.fetcher.cache.path(msg.known).read_bytes())
        try:
            result = await asyncio.to_thread(view.snapshot, previous)
        except (OSError, TreeError) as exc:
            return ArtifactsTreeReply(req=msg.req, job_id=msg.job_id, error=str(exc))
        self.synced[msg.job_id] = result.tree
        return ArtifactsTreeReply(
            req=msg.req, job_id=msg.job_id, tree=encode_tree(result.tree),
            root=str(view.read_root().absolute()),
            sources=[ChunkSource(d, s.path, s.offset, s.size) for d, s in result.sources.items()],
            fetched_bytes=view.fetched_bytes, mode=view.mode, note=view.note,
        )

    async def close(self, job_id: int) -> None:
        """The attempt ended: unmount (its tree's state stays on disk for the final
        sync)."""
        view = self.views.pop(job_id, None)
        if view is not None:
            # set before the unmount: a sync meanwhile must see the tree's part
            self.closed[job_id] = view  # the final sync still reports how it started
            await asyncio.to_thread(view.close)

    @staticmethod
    def sync_wanted(directory: Path) -> bool:
        """`$NVQ_ARTIFACTS/.sync` was touched: take it away and say so."""
        marker = directory / ".sync"
        try:
            marker.unlink()
        except OSError:
            return False
        return True


def job_dir_owner(job_dir: Path) -> tuple[int, int] | None:
    """The job's user, as its directory says (the runner gave it to them at launch);
    None when that is the runner's own."""
    try:
        st = job_dir.stat()
    except OSError:
        return None
    return None if st.st_uid == os.geteuid() else (st.st_uid, st.st_gid)
