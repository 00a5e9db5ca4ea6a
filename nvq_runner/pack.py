"""`pack --path PATH`: write PATH (a file, or a directory and everything under it) to
stdout as a tar stream, symlinks as symlinks. The daemon runs it as a step of a Slurm
pilot's allocation for `nvq job pull`, where the login connection cannot read the
compute node's disk; the queue host extracts it with tarfile's "data" filter."""

from __future__ import annotations

import os
import sys
import tarfile


def pack(path: str) -> int:
    if not os.path.lexists(path):
        print(f"nvq_runner: no {path} here", file=sys.stderr)
        return 1
    name = os.path.basename(os.path.normpath(path)) or "root"
    try:
        with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
            tar.add(path, arcname=name, recursive=True)  # symlinks are not followed
    except OSError as exc:
        print(f"nvq_runner: cannot pack {path}: {exc}", file=sys.stderr)
        return 1
    return 0
