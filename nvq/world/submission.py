"""What `nvq job submit` takes with a job from where it was typed: the submit
directory, the shell's environment, and (unless the job runs in place) a snapshot of
the directory stored in the queue host's blob store."""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvq.config import SubmitConfig
from nvq.world.blobs import BlobStore
from nvq.world.environment import capture
from nvq.world.snapshot import SnapshotError, store_snapshot, take_snapshot

__all__ = ["SnapshotError", "WorldOptions", "blob_root", "submission_world"]

STAT_CACHE = "statcache"


@dataclass(frozen=True)
class WorldOptions:
    no_env: bool = False
    no_snapshot: bool = False
    in_place: bool | None = None  # None: `[submit] in_place`
    workdir: str | None = None  # an explicit --workdir: run there, take no snapshot


def blob_root(home: Path) -> Path:
    return home / "blobs"


def submission_world(
    *, cwd: Path, environ: Mapping[str, str], config: SubmitConfig, options: WorldOptions,
    home: Path, notice: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The JobSpec fields of a job's world. Raises SnapshotError with a line for the
    user when the directory cannot (or should not) be snapshotted; `notice` gets the
    line that names files which vanished meanwhile (skipped)."""
    in_place = config.in_place if options.in_place is None else options.in_place
    fields: dict[str, Any] = {
        "cwd": str(cwd),
        "env_captured": {} if options.no_env else capture(environ, config.env_exclude),
        "in_place": in_place,
    }
    if in_place or options.no_snapshot or options.workdir is not None:
        return fields
    store = BlobStore(blob_root(home))
    try:
        snapshot = take_snapshot(
            cwd, max_size=config.max_snapshot, stat_cache=store.root / STAT_CACHE,
            exclude=[home],
        )
        fields["manifest_id"] = store_snapshot(snapshot, store)
        line = snapshot.vanished_line()
        if line is not None and notice is not None:
            notice(line)
    except PermissionError as exc:
        raise SnapshotError(
            f"cannot write the snapshot into {store.root}: {exc.strerror} "
            "(submit as the queue's owner, or pass --no-snapshot)"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise SnapshotError(
            f"the queue host's disk is full: no room for the snapshot in {store.root} "
            "(nothing was submitted; free some space, or pass --no-snapshot)"
        ) from None
    return fields
