"""The mark a planned stop leaves in `$NVQ_HOME` (`daemon.stopped`): written by `nvq
daemon stop` (its owner) or by the daemon for a stop it allowed (a member admin, who
may not write the owner's home); read and cleared by the clients that would start a
daemon (nvq.client.stop_mark says which may)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from nvq.home import Home


def leave(root: Path, pid: int | None, *, by: str | None = None) -> None:
    path = Home(root).stopped_mark
    who = by if by is not None else os.environ.get("USER", "")
    text = json.dumps({"at": time.time(), "pid": pid, "by": who})
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text + "\n")
    tmp.replace(path)


def said(root: Path) -> str | None:
    """How the mark reads (`stopped by \\`nvq daemon stop\\` at 14:02`), None: no mark."""
    try:
        doc = json.loads(Home(root).stopped_mark.read_text())
        at = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(doc["at"])))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return "stopped by `nvq daemon stop`"
    return f"stopped by `nvq daemon stop` at {at}"


def clear(root: Path) -> str | None:
    """Remove the mark; what it said (None: there was none)."""
    what = said(root)
    if what is not None:
        Home(root).stopped_mark.unlink(missing_ok=True)
    return what
