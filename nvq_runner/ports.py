"""A TCP port for each job ($NVQ_PORT, and MASTER_PORT unless the job sets one).

The runner picks it, not the daemon: only the node knows which ports are free there
right now (a torchrun someone started by hand, a notebook, the previous job's socket
in TIME_WAIT), and the runner already knows every live attempt on its node, adopted
ones included (the port is kept in attempt.json). Ports are handed out round-robin
from a fixed range, so a port a job just released is not given straight back while
its old connections linger. A runner starts the round at a random place in the range:
runners that share a host (pilots on one compute node, a test suite's many nodes)
would otherwise all hand out its first port at once, each finding it free, and their
jobs would race to bind it.
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Collection

# torchrun's default is 29500: the range starts there so jobs look familiar, and
# steps over it when a hand-started one holds it.
FIRST = 29500
LAST = 30499


def port_range() -> tuple[int, int]:
    """`NVQ_PORT_RANGE=LO-HI` in the runner's environment moves the range (a node
    whose firewall opens other ports)."""
    raw = os.environ.get("NVQ_PORT_RANGE", "")
    lo, sep, hi = raw.partition("-")
    if sep and lo.isdigit() and hi.isdigit() and 1024 <= int(lo) <= int(hi) <= 65535:
        return int(lo), int(hi)
    return FIRST, LAST


def round_start(lo: int, hi: int) -> int:
    """Where a new runner's round begins (`pick`'s `after`): anywhere in the range."""
    return random.randint(lo, hi)


def bindable(port: int) -> bool:
    """Can a job listen on `port` on every address now? (A plain bind, without
    SO_REUSEADDR, so a port with connections still in TIME_WAIT counts as taken.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def pick(
    taken: Collection[int],
    after: int | None,
    lo: int,
    hi: int,
    free: Callable[[int], bool] = bindable,
) -> int | None:
    """The first port after `after` (wrapping within lo..hi) that no live job holds
    and that `free` says is free; None when the whole range is in use."""
    size = hi - lo + 1
    start = lo if after is None or not lo <= after <= hi else after + 1
    for i in range(size):
        port = lo + (start - lo + i) % size
        if port not in taken and free(port):
            return port
    return None
