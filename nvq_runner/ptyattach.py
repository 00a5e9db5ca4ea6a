"""`pty-attach --sock PATH`: splice stdin/stdout to an interactive job's terminal
socket (ptyhost.py). The daemon runs this over the node's SSH connection (or as a
local process for its own node), once the job has started; the socket appears a
moment after the start, so it is waited for."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .attach import splice_until_closed
from .launcher import connect_path

POLL = 0.01


def pty_attach(path: Path, wait: float) -> int:
    deadline = time.monotonic() + wait
    while True:
        try:
            sock = connect_path(path)
            break
        except OSError as exc:
            if time.monotonic() >= deadline:
                print(f"nvq_runner: no session terminal at {path}: {exc.strerror}",
                      file=sys.stderr)
                return 1
            time.sleep(POLL)
    splice_until_closed(sock)
    return 0
