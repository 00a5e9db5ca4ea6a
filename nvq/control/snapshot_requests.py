"""Requests that let a client who cannot touch the queue's home (a member of a shared
queue) submit with a snapshot as the owner does: the `[submit]` settings, and a
connection that takes the snapshot's blobs the queue lacks into the daemon's store
(nvq.world.blobsync's exchange, on the socket after one `Done`)."""

from __future__ import annotations

import msgspec


class SubmitSettings(msgspec.Struct, tag="submit_settings", frozen=True):
    """The queue's `[submit]` section (`SubmitConfig`): what a submit takes with a job."""


class ReceiveSnapshot(msgspec.Struct, tag="receive_snapshot", frozen=True):
    """Store a snapshot's blobs: answered with one `Done`; then, when it holds no error,
    the connection carries the blob exchange (nvq.world.blobsync) until its receipt."""
