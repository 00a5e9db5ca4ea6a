"""A snapshot sent through the daemon's socket, for a user who may not write the
queue's blob store (a member of a shared queue): taken here, with the queue's
`[submit]` settings as the daemon gave them and this user's own stat cache, and only
the blobs the queue lacks cross (nvq.world.blobsync; the daemon's end is
nvq.daemon.artifacts.snapshot_intake). Nothing is written into the owner's home by this user."""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
from pathlib import Path
from typing import IO, Any

from nvq import control as c
from nvq.config import SubmitConfig
from nvq.world.blobsync import SourceChanged, SyncError, send
from nvq.world.snapshot import SnapshotError, take_snapshot
from nvq_runner.protocol import FrameError, FrameReader, encode_manifest, manifest_id

__all__ = ["relay_snapshot", "send_snapshot", "user_stat_cache"]


def user_stat_cache() -> Path | None:
    """This user's own stat cache (`~/.cache/nvq/statcache`), or None where they have
    no home to keep one in: every file is then hashed."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    folder = Path(base) / "nvq"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / "statcache"


def send_snapshot(client: Any, cwd: Path, home: Path, settings: SubmitConfig) -> str:
    """Snapshot `cwd`, store what the queue lacks through `client` (nvq.client.Client),
    and return the manifest id. Raises SnapshotError with one line for the user."""
    snapshot = take_snapshot(
        cwd, max_size=settings.max_snapshot, stat_cache=user_stat_cache(), exclude=[home],
    )
    mid = manifest_id(snapshot.manifest)
    sources: dict[str, Path | bytes] = dict(sorted(snapshot.sources.items()))
    sources[mid] = encode_manifest(snapshot.manifest)  # last: files before their manifest
    sock = client.open_stream(c.ReceiveSnapshot())
    try:
        _go_ahead(sock)
        with sock.makefile("rb") as inp, sock.makefile("wb") as out:
            send(sources, inp, out)
    except SourceChanged as exc:
        raise SnapshotError(str(exc)) from None
    except (SyncError, OSError, FrameError) as exc:
        why = str(exc) or "the queue stopped reading"
        raise SnapshotError(f"cannot send the snapshot to the queue: {why}") from None
    finally:
        with contextlib.suppress(OSError):
            sock.close()
    return mid


def relay_snapshot(client: Any, inp: IO[bytes], out: IO[bytes]) -> None:
    """Pass a blob exchange through to the daemon byte for byte: a `[remote]` submit's
    `queue receive-blobs`, run by a member on the queue host, relays the typing
    machine's blobs (on `inp`, answers on `out`) into the daemon's `ReceiveSnapshot`,
    which stores them as the queue's user and counts them as this member's. Raises
    SnapshotError with one line when the daemon refuses."""
    sock = client.open_stream(c.ReceiveSnapshot())
    try:
        _go_ahead(sock)
        _pump(sock, inp.fileno(), out)
    except OSError as exc:
        raise SnapshotError(f"cannot pass the snapshot to the queue: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            sock.close()


def _pump(sock: socket.socket, up: int, out: IO[bytes]) -> None:
    """Both ways in one thread, until the daemon closes (after its receipt, or on
    giving up): no reader is left blocked on a typing machine that sends no more.
    The exchange takes turns, so a blocking send never waits on an unread answer."""
    with selectors.DefaultSelector() as sel:
        sel.register(up, selectors.EVENT_READ, "up")
        sel.register(sock, selectors.EVENT_READ, "down")
        while True:
            for key, _ in sel.select():
                if key.data == "up":
                    chunk = os.read(up, 1 << 16)
                    if chunk:
                        sock.sendall(chunk)
                    else:  # the typing machine is done
                        sel.unregister(up)
                        sock.shutdown(socket.SHUT_WR)
                    continue
                data = sock.recv(1 << 16)
                if not data:
                    return
                out.write(data)
                out.flush()


def _go_ahead(sock: Any) -> None:
    """The daemon's one `Done` before the exchange: a refusal ends it here."""
    frames = FrameReader(max_message=None)
    while True:
        data = sock.recv(1 << 16)
        if not data:
            raise SyncError("the queue closed the connection")
        for payload in frames.feed(data):
            reply = c.reply_decoder.decode(payload)
            if isinstance(reply, c.Done):
                if reply.error:
                    raise SnapshotError(reply.error)
                return
