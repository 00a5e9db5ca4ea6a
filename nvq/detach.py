"""Starting one of nvq's own long-lived processes (the daemon, the keeper) detached
from the terminal that asked for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def spawn_detached(module: str, home: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """`python -P -m MODULE HOME` in a new session, output appended to `log_path`.
    -P and cwd="/": never import from (or pin) the caller's directory."""
    with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
        return subprocess.Popen(
            [sys.executable, "-P", "-m", module, str(home)],
            cwd="/",
            stdin=devnull,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
