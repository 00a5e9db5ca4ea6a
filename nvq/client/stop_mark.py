"""The mark `nvq daemon stop` leaves: the queue was stopped on purpose. A client that
only observes (the web page, the TUI, `queue events --follow`, the MCP server's
reads, or any command run with NVQ_OBSERVE=1) starts no daemon while it is there,
and the keeper waits; `nvq daemon start` or any other command that starts one
clears it and says so."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from nvq.client.errors import DaemonUnavailable
from nvq.home import Home

OBSERVE_ENV = "NVQ_OBSERVE"  # "1": this process only observes (the MCP server's reads)


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


def before_start(root: Path, *, observing: bool) -> None:
    """A client is about to start the daemon: an observer may not while the mark is
    there; anyone else clears it, with one line on stderr."""
    what = said(root)
    if what is None:
        return
    if observing or os.environ.get(OBSERVE_ENV) == "1":
        raise DaemonUnavailable(f"the daemon was {what}: `nvq daemon start` starts it")
    clear(root)
    print(f"nvq: starting the daemon, {what}", file=sys.stderr)
