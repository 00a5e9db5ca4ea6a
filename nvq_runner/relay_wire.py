"""The relay messages of the wire protocol (see protocol.py): a job's own `nvq` talks
to its queue through the runner that runs it.

The runner listens on a Unix socket in each attempt's directory (`$NVQ_SOCKET`) and
carries every connection made there, byte for byte, over its link to the daemon:
`RelayUp` runner → daemon, `RelayDown` daemon → runner, both numbered by `req` (one
per connection, the runner's count). The bytes are the control socket's own frames,
so the job's client speaks to the daemon exactly as the CLI does on the queue host.
The daemon serves them as the attempt's owner, and only while that attempt runs on
the node that sent them. `eof` ends a direction: the client closed (up), or the
answer is complete (down; the runner then closes the connection). A runner offers
the socket only when the daemon's `Start` says `relay` (an older daemon never does),
and lists "relay" among its `Hello` features."""

from __future__ import annotations

import msgspec


class RelayUp(msgspec.Struct, tag="relay_up", frozen=True):
    req: int
    job_id: int
    attempt: int
    data: bytes = b""
    eof: bool = False


class RelayDown(msgspec.Struct, tag="relay_down", frozen=True):
    req: int
    data: bytes = b""
    eof: bool = False
