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
from typing import TYPE_CHECKING

import anyio
from anyio.abc import SocketAttribute, SocketStream

from nvq.daemon.core.errors import RequestError
from nvq.daemon.machines.blobs import blob_store
from nvq.world.blobsync import SyncError, receive

if TYPE_CHECKING:
    from nvq.daemon.core.state import State

# user → the blobs (files, manifests) they sent through the daemon (`Context.snapshots`)
Sent = dict[str, set[str]]

log = logging.getLogger("nvq.snapshots")

# A client that stops half way does not hold a thread for ever, and stalled clients
# hold a few threads of their own, not the daemon's shared pool.
IDLE_LIMIT = 300.0
EXCHANGES = 4


def check_sent(sent: Sent, user: str, manifest_id: str) -> None:
    """A member submits only a snapshot they sent (its manifest's bytes came from them,
    since this daemon started): another member's manifest id, read off `job show`,
    names their code but is not theirs to run."""
    if manifest_id not in sent.get(user, ()):
        raise RequestError(
            f"the snapshot {manifest_id[:12]} was not sent by {user}: submit from your own "
            "directory (or pass --no-snapshot)")


def _proved(sent: Sent, user: str, names: list[str]) -> None:
    theirs = sent.setdefault(user, set())
    if len(theirs) + len(names) > KEPT_PER_USER:
        theirs.clear()  # memory stays bounded; their next submits send everything again
    theirs.update(names)


# Blob names (files and manifests) remembered per member, in memory only: after a
# restart a member's first submit sends everything again (docs/DESIGN.md says why
# that is not persisted).
KEPT_PER_USER = 200_000


async def receive_snapshot(
    state: State, sent: Sent, stream: SocketStream, go: bytes, user: str
) -> None:
    """Send `go` (the framed `Done`), then take the exchange in a thread, on a blocking
    copy of the connection's socket: the blob store's writes are blocking file I/O."""
    await stream.send(go)
    sock = stream.extra(SocketAttribute.raw_socket)
    fd = os.dup(sock.fileno())
    store = blob_store(state.home)
    limit = state.config.submit.max_snapshot

    known = sent.get(user, set())

    def proved(names: list[str]) -> None:  # in the exchange's thread, before the receipt
        anyio.from_thread.run_sync(_proved, sent, user, names)

    def exchange() -> int:
        with socket.socket(fileno=fd) as conn:
            conn.settimeout(IDLE_LIMIT)
            with conn.makefile("rb") as inp, conn.makefile("wb") as out:
                return receive(store, inp, out, max_bytes=limit, known=known, proved=proved)

    global _limiter
    _limiter = _limiter or anyio.CapacityLimiter(EXCHANGES)
    try:
        count = await anyio.to_thread.run_sync(exchange, limiter=_limiter)
    except (SyncError, OSError) as exc:  # the client sees the exchange break off
        log.warning("a snapshot from %s was not stored: %s", user, exc)
        return
    log.debug("stored %d blob(s) of a snapshot from %s", count, user)


_limiter: anyio.CapacityLimiter | None = None
