"""Which files of a job's working copy the job created or changed, for `job show`.

When the working copy is built, each regular file's (inode, size, mtime) is recorded
beside it (`work.built`); when an attempt ends, a file that is not in the record or
whose triple differs is one the job wrote (a new file, one it replaced, or one it
rewrote). Comparing against a recorded state rather than a build time keeps clear of
file timestamps' coarse clock. Read when an attempt ends, on the runner's loop: the
walk and the list are bounded.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import msgspec

BUILT = "work.built"
WALK_LIMIT = 50_000  # entries looked at: a job writing a million files is not listed whole
MAX_LISTED = 500
SKIPPED = frozenset({"__pycache__", ".git"})

# (path relative to the working copy, size in bytes, mtime in seconds)
Written = tuple[str, int, float]
_Record = dict[str, tuple[int, int, int]]  # path → (inode, size, mtime_ns)
_decoder = msgspec.msgpack.Decoder(_Record)


def _files(top: str, limit: int) -> Iterator[tuple[str, os.stat_result]]:
    seen = 0
    stack = [top]
    while stack and seen < limit:
        directory = stack.pop()
        try:
            items = list(os.scandir(directory))
        except OSError:
            continue
        for item in items:
            seen += 1
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if item.name not in SKIPPED:
                    stack.append(item.path)
            elif stat.S_ISREG(st.st_mode):
                yield os.path.relpath(item.path, top), st


def record(job_dir: Path) -> None:
    """Remember the working copy of `job_dir` as built (call it once, right after)."""
    files = {rel: (st.st_ino, st.st_size, st.st_mtime_ns)
             for rel, st in _files(str(job_dir / "work"), 10 * WALK_LIMIT)}
    with contextlib.suppress(OSError):
        (job_dir / BUILT).write_bytes(msgspec.msgpack.encode(files))


def written(job_dir: Path) -> list[Written]:
    """The files under `job_dir/work` the job wrote, by path, at most MAX_LISTED;
    [] when it has no working copy."""
    try:
        built = _decoder.decode((job_dir / BUILT).read_bytes())
    except (OSError, msgspec.DecodeError):
        return []
    out: list[Written] = []
    for rel, st in _files(str(job_dir / "work"), WALK_LIMIT):
        if built.get(rel) != (st.st_ino, st.st_size, st.st_mtime_ns):
            out.append((rel, st.st_size, st.st_mtime_ns / 1e9))
    out.sort()
    return out[:MAX_LISTED]
