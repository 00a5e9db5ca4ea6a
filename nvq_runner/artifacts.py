"""A job's artifacts directory, described for the daemon: relative path, size and
modification time (ns) of every regular file. Symlinks are not followed: a link out
of the directory must not drag the node's disk to the queue host."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .protocol import ArtifactFile


def manifest(root: Path) -> list[ArtifactFile]:
    files: list[ArtifactFile] = []
    if not root.is_dir():
        return files
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue  # removed while we looked (a checkpoint being replaced)
            if not path.is_symlink() and path.is_file():
                rel = path.relative_to(root).as_posix()
                files.append(ArtifactFile(path=rel, size=st.st_size, mtime_ns=st.st_mtime_ns,
                                          mode=stat.S_IMODE(st.st_mode)))
    return files
