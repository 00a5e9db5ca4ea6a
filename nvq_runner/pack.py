"""`pack --path PATH`: write PATH (a file, or a directory and everything under it) to
stdout as a tar stream, symlinks as symlinks, leaving out sockets, fifos and devices.
The daemon runs it for `nvq job pull` over the node's SSH connection (or as a step of
a Slurm pilot's allocation, where the login connection cannot read the compute
node's disk); the queue host extracts it with tarfile's "data" filter."""

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
            # symlinks are not followed; sockets (which tarfile skips), fifos and
            # devices a job left are not files to copy (the local copy skips them too)
            tar.add(path, arcname=name, recursive=True, filter=_plain)
    except OSError as exc:
        print(f"nvq_runner: cannot pack {path}: {exc}", file=sys.stderr)
        return 1
    return 0


def _plain(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return member if member.isreg() or member.isdir() or member.issym() or member.islnk() else None
