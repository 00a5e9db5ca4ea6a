"""The mark `nvq daemon stop` leaves: the queue was stopped on purpose. A client that
only observes (the web page, the TUI, `queue events --follow`, the MCP server's
reads, or any command run with NVQ_OBSERVE=1) starts no daemon while it is there,
and the keeper waits; `nvq daemon start` or any other command that starts one
clears it and says so."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nvq.client.errors import DaemonUnavailable
from nvq.stopped_mark import clear, leave, said

__all__ = ["OBSERVE_ENV", "before_start", "clear", "leave", "said"]

OBSERVE_ENV = "NVQ_OBSERVE"  # "1": this process only observes (the MCP server's reads)


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
