"""`port-connect --port N`: splice stdin/stdout to a TCP port on this machine's
loopback. The daemon runs it as a step inside a Slurm pilot's allocation (`srun
--overlap`), whose login connection cannot reach the compute node's ports, so that
`nvq job forward` works there as it does on any node."""

from __future__ import annotations

import socket
import sys

from .attach import splice_until_closed


def port_connect(port: int) -> int:
    try:
        sock = socket.create_connection(("localhost", port), timeout=10)
    except OSError as exc:
        print(f"nvq_runner: nothing listens on port {port} here: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    sock.settimeout(None)
    splice_until_closed(sock)
    return 0
