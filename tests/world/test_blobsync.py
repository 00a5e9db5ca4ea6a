"""The blob exchange of a forwarded submit, both ends in one process over socket
pairs: only what the queue host lacks crosses, and nothing unnamed or altered is
stored."""

from __future__ import annotations

import hashlib
import socket
import threading
from pathlib import Path

import pytest

from nvq.world.blobs import BlobStore
from nvq.world.blobsync import SyncError, receive, send


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def exchange(store: BlobStore, sources: dict[str, Path | bytes],
             known: set[str] | None = None) -> tuple[int, int]:
    here, there = socket.socketpair()
    errors: list[BaseException] = []

    def host() -> None:
        with there, there.makefile("rb") as inp, there.makefile("wb") as out:
            try:
                receive(store, inp, out, known=known, proved=known.update if known is not None
                        else None)
            except BaseException as exc:
                errors.append(exc)

    thread = threading.Thread(target=host)
    thread.start()
    with here, here.makefile("rb") as inp, here.makefile("wb") as out:
        result = send(sources, inp, out)
    thread.join()
    assert not errors, errors
    return result


def test_only_missing_blobs_cross(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    big = tmp_path / "big.bin"
    big.write_bytes(b"b" * 3_000_000)
    sources: dict[str, Path | bytes] = {sha(big.read_bytes()): big, sha(b"small"): b"small"}
    assert exchange(store, sources) == (2, 3_000_005)
    assert store.read_bytes(sha(b"small")) == b"small"
    sources[sha(b"new")] = b"new"
    assert exchange(store, sources) == (1, 3)
    assert exchange(store, sources) == (0, 0)


def test_a_blob_with_other_content_is_refused(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    here, there = socket.socketpair()
    with there, there.makefile("rb") as inp, there.makefile("wb") as out:
        digest = sha(b"right")
        here.sendall(f'["{digest}"]\n{digest} 5\nwrong'.encode())
        with pytest.raises(SyncError, match="other content"):
            receive(store, inp, out)
    here.close()
    assert not store.has(digest)


def test_names_that_are_no_hashes_are_refused(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    here, there = socket.socketpair()
    with there, there.makefile("rb") as inp, there.makefile("wb") as out:
        here.sendall(b'["../../etc/passwd"]\n')
        with pytest.raises(SyncError, match="not a blob name"):
            receive(store, inp, out)
    here.close()


def test_a_member_sends_what_they_have_not_sent_before_whatever_the_store_holds(
    tmp_path: Path,
) -> None:
    # The answer to a member's list says nothing of what others stored, and naming a
    # blob someone else sent is not having it: they send it, and only then know it.
    store = BlobStore(tmp_path / "blobs")
    theirs: dict[str, Path | bytes] = {sha(b"the owner's file"): b"the owner's file"}
    assert exchange(store, theirs) == (1, 16)
    member: set[str] = set()
    mine: dict[str, Path | bytes] = {**theirs, sha(b"manifest"): b"manifest"}
    assert exchange(store, mine, member) == (2, 24)
    assert member == set(mine)
    assert exchange(store, mine, member) == (0, 0)  # their own, from now on
