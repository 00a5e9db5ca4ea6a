"""A job's prerequisites' artifacts at `$NVQ_INPUTS/<id>/`, read-only.

The daemon names, in `Start.inputs`, the newest synced tree of every job this one runs
`--after` (or `--after-any`). Each is given the way a moved job's own checkpoints are
(artifact_view.py), on whichever node the job lands: mounted on demand through FUSE,
read-only (the kernel answers EROFS to any write), so reading a file fetches only its
chunks; or, where FUSE is not available, restored in full before the job starts and
made read-only by its modes. A prerequisite that synced nothing is an empty folder.
The mounts go when the attempt ends, however it ends; `inputs.json` in the job
directory lets a restarted runner mount them again for a job still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
from pathlib import Path

from .artifact_tree import FILE, ArtifactTree, TreeError, decode_tree
from .artifact_view import LinkChunks, restore
from .blobfetch import BlobFetcher, FetchError
from .errors import NvqRunnerError
from .job_artifacts import job_dir_owner

log = logging.getLogger(__name__)

INDEX = "inputs.json"  # beside the inputs folder: what was given, for a remount


class InputsError(NvqRunnerError):
    """The attempt cannot get its prerequisites' artifacts; the message is for the user."""


def _uppers(root: Path) -> Path:
    return root.with_name(root.name + ".upper")  # a read-only mount writes nothing there


def read_only(root: Path) -> None:
    """Files 0444, folders 0555 (after a full restore): the modes say what the mount
    enforces."""
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, name), 0o444)
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, name), 0o555)
    os.chmod(root, 0o555)


def remove(root: Path) -> None:
    """Take an earlier attempt's inputs away (its folders may be read-only)."""
    if not root.exists():
        return
    for dirpath, _dirs, _files in os.walk(root):
        with contextlib.suppress(OSError):
            os.chmod(dirpath, 0o700)
    shutil.rmtree(root, ignore_errors=True)


def _fresh(root: Path) -> None:
    """An empty inputs folder: an earlier attempt's mounts and copies taken away."""
    from .fusemount import clean_stale

    clean_stale(root)
    remove(root)
    remove(_uppers(root))
    root.mkdir(mode=0o700, parents=True)


def _seal(root: Path, inputs: dict[str, str]) -> None:
    os.chmod(root, 0o555)  # no new folder beside the prerequisites' ones
    root.with_name(INDEX).write_text(json.dumps(inputs))


def _holds(path: Path) -> bool:
    try:
        return any(path.iterdir())
    except OSError:
        return False


class InputViews:
    def __init__(self, fetcher: BlobFetcher) -> None:
        self.fetcher = fetcher
        self.mounts: dict[int, list[object]] = {}  # job → its live fusemount.Mounts
        self.notes: dict[int, str] = {}  # job → why its inputs were restored in full
        self._remounts: list[asyncio.Task[None]] = []

    async def _tree(self, job_id: int, tree_id: str) -> ArtifactTree:
        cache = self.fetcher.cache
        if not cache.has(tree_id):
            await self.fetcher.fetch(job_id, [tree_id], {})
        return decode_tree(cache.path(tree_id).read_bytes())

    async def prepare(self, job_id: int, inputs: dict[str, str], root: Path, *,
                      lazy: bool, node: str, owner: tuple[int, int] | None = None) -> None:
        """Blocks the attempt's start only as long as the mounts (or full restores).
        `owner`: the job's (uid, gid) when it runs as another user than the runner; its
        mounts show every file as theirs and let them in (allow_other), read-only still."""
        from .fusemount import unavailable

        await self.close(job_id)
        await asyncio.to_thread(_fresh, root)
        why = "lazy_artifacts = false" if not lazy else await asyncio.to_thread(unavailable)
        loop = asyncio.get_running_loop()
        try:
            for dep, tree_id in sorted(inputs.items()):
                if not dep.isdigit():
                    raise InputsError(f"not a job id: {dep[:40]!r}")
                target = root / dep
                tree = await self._tree(job_id, tree_id) if tree_id else ArtifactTree([])
                chunks = LinkChunks(self.fetcher, loop, job_id, tree.sizes())
                if tree.files() and why is None:
                    try:
                        await asyncio.to_thread(self._mount, job_id, tree, chunks, target,
                                                owner)
                        continue
                    except OSError as exc:
                        why = str(exc)
                await asyncio.to_thread(self._restore, tree, chunks, target)
                if tree.files():
                    self.notes[job_id] = f"inputs restored in full: FUSE not available " \
                                         f"on {node} ({why})"
            await asyncio.to_thread(_seal, root, inputs)
        except (FetchError, TreeError, OSError) as exc:
            await self.close(job_id)
            raise InputsError(f"cannot give the job its prerequisites' artifacts: {exc}") \
                from None

    def _mount(self, job_id: int, tree: ArtifactTree, chunks: LinkChunks, target: Path,
               owner: tuple[int, int] | None) -> None:
        from .fusemount import Mount
        from .lazyfs import LazyFS

        upper = _uppers(target.parent) / target.name
        upper.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.mkdir(mode=0o700)
        mount = Mount(LazyFS(tree, upper, chunks, owner=owner), target, readonly=True,
                      allow_other=owner is not None)
        mount.start()
        self.mounts.setdefault(job_id, []).append(mount)

    @staticmethod
    def _restore(tree: ArtifactTree, chunks: LinkChunks, target: Path) -> None:
        if any(e.kind == FILE for e in tree.entries):
            restore(tree, target, chunks)
        else:
            target.mkdir(mode=0o700, exist_ok=True)
        read_only(target)

    def remount_all(self, roots: dict[int, Path]) -> None:
        """After a runner restart, in the background: a tree the cache lacks comes over
        the link, which is not up yet."""
        loop = asyncio.get_running_loop()
        self._remounts = [loop.create_task(self.remount(job_id, root))
                          for job_id, root in roots.items()]

    async def remount(self, job_id: int, root: Path, *, lazy: bool = True) -> None:
        """A job that outlived its runner: mount what its inputs.json names again."""
        index = root.with_name(INDEX)
        try:
            inputs = json.loads(index.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(inputs, dict) or all(
                not tree or _holds(root / dep) for dep, tree in inputs.items()):
            return  # restored in full (or nothing to give): no mount was lost
        try:
            await self.prepare(job_id, inputs, root, lazy=lazy, node="",
                               owner=job_dir_owner(root.parent))
            log.info("job %s: inputs mounted again at %s", job_id, root)
        except InputsError as exc:
            log.warning("job %s: %s", job_id, exc)

    async def close(self, job_id: int) -> None:
        """The attempt ended: unmount its inputs."""
        from .fusemount import Mount

        for mount in self.mounts.pop(job_id, []):
            if isinstance(mount, Mount):
                await asyncio.to_thread(mount.stop)
