"""The daemon's end of `ReceiveSnapshot`: a client that may not write the queue's
blob store (a member of a shared queue) sends its snapshot's blobs through the daemon,
which stores them as the queue's user, hashing each as it arrives (nvq.world.blobsync,
the same exchange a `[remote]` submit makes over SSH). What any client may send is
bounded by `[submit] max_snapshot`; nothing of it is readable by any other member
(the store is the owner's, 0700)."""

from __future__ import annotations

import logging
import os
import socket

import anyio
from anyio.abc import SocketAttribute, SocketStream

from nvq.daemon.blobs import blob_store
from nvq.daemon.context import Context
from nvq.world.blobsync import SyncError, receive

log = logging.getLogger("nvq.snapshots")

# A client that stops half way does not hold a thread for ever.
IDLE_LIMIT = 300.0


async def receive_snapshot(ctx: Context, stream: SocketStream, go: bytes, user: str) -> None:
    """Send `go` (the framed `Done`), then take the exchange in a thread, on a blocking
    copy of the connection's socket: the blob store's writes are blocking file I/O."""
    await stream.send(go)
    sock = stream.extra(SocketAttribute.raw_socket)
    fd = os.dup(sock.fileno())
    store = blob_store(ctx.state.home)
    limit = ctx.state.config.submit.max_snapshot

    def exchange() -> int:
        with socket.socket(fileno=fd) as conn:
            conn.settimeout(IDLE_LIMIT)
            with conn.makefile("rb") as inp, conn.makefile("wb") as out:
                return receive(store, inp, out, max_bytes=limit)

    try:
        count = await anyio.to_thread.run_sync(exchange)
    except (SyncError, OSError) as exc:  # the client sees the exchange break off
        log.warning("a snapshot from %s was not stored: %s", user, exc)
        return
    log.debug("stored %d blob(s) of a snapshot from %s", count, user)
