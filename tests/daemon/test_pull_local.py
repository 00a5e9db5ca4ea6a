"""`job pull` from the queue host's own node: a plain copy of the job's files."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from nvq.daemon.artifacts.pull import copy_local


def test_a_local_copy_leaves_sockets_and_fifos_out(tmp_path: Path) -> None:
    """A job may leave a socket or a fifo in its directory: `job pull` copies its files
    and leaves those out, instead of failing (a socket cannot be opened) or blocking
    (a fifo waits for a writer)."""
    src = tmp_path / "job"
    (src / "sub").mkdir(parents=True)
    (src / "out.txt").write_text("kept")
    (src / "sub" / "deep.txt").write_text("kept too")
    os.symlink("out.txt", src / "link")
    os.mkfifo(src / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(src / "sub" / "app.sock"))
    try:
        copy_local(str(src), tmp_path / "copy")
    finally:
        sock.close()
    copied = sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*"))
    assert copied == ["link", "out.txt", "sub", "sub/deep.txt"]
