from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

import pytest

from nvq.world.blobs import BlobStore, ObjectMismatch
from nvq_runner.protocol import FILE, Entry, Manifest


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_of(*contents: bytes) -> Manifest:
    return Manifest([
        Entry(f"f{i}", FILE, 0o644, len(c), sha(c)) for i, c in enumerate(contents)
    ])


def test_objects_are_private_whatever_the_umask(tmp_path: Path, umask_000: None) -> None:
    store = BlobStore(tmp_path / "blobs")
    digest = store.put_bytes(b"code")
    path = store.path(digest)
    assert path == tmp_path / "blobs" / "objects" / digest[:2] / digest[2:]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (tmp_path / "blobs", path.parent.parent, path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_file_is_copied_not_linked(tmp_path: Path) -> None:
    source = tmp_path / "train.py"
    source.write_text("v1")
    store = BlobStore(tmp_path / "blobs")
    digest = store.put_file(source)
    source.write_text("v2")
    with store.open(digest) as handle:
        assert handle.read() == b"v1"


def test_content_that_does_not_match_its_name_is_not_stored(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(ObjectMismatch):
        store.put_bytes(b"evil", expected=sha(b"good"))
    assert store.usage() == (0, 0)
    assert not list((tmp_path / "blobs" / "tmp").iterdir())


def test_missing_names_each_absent_blob_once(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    have = store.put_bytes(b"have")
    assert store.missing([sha(b"b"), have, sha(b"a"), sha(b"b")]) == [sha(b"b"), sha(b"a")]
    assert store.has(have) and not store.has(sha(b"a"))


def test_manifests_are_blobs_too(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    manifest = manifest_of(b"one", b"two")
    for data in (b"one", b"two"):
        store.put_bytes(data)
    manifest_id = store.put_manifest(manifest)
    assert store.get_manifest(manifest_id) == manifest
    assert store.missing_for(manifest) == []
    assert store.usage() == (3, len(b"one") + len(b"two") + store.path(manifest_id).stat().st_size)


def test_gc_frees_what_no_live_job_reaches(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    for data in (b"shared", b"only-old", b"only-live"):
        store.put_bytes(data)
    old = store.put_manifest(manifest_of(b"shared", b"only-old"))
    live = store.put_manifest(manifest_of(b"shared", b"only-live"))
    old_manifest_size = store.path(old).stat().st_size
    report = store.gc([live], now=time.time() + 2 * 3600)  # past the grace period
    assert (report.objects_freed, report.bytes_freed) == (2, len(b"only-old") + old_manifest_size)
    assert report.objects_kept == 3
    assert store.has(sha(b"shared")) and store.has(sha(b"only-live")) and store.has(live)
    assert not store.has(sha(b"only-old")) and not store.has(old)


def test_gc_spares_blobs_a_submit_is_still_recording(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.put_bytes(b"just stored")
    report = store.gc([])
    assert report.objects_freed == 0 and store.has(sha(b"just stored"))


def test_asking_what_is_missing_renews_the_present_blobs(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    digest = store.put_bytes(b"old code")
    os.utime(store.path(digest), (1_600_000_000, 1_600_000_000))
    assert store.missing([digest]) == []
    assert store.gc([]).objects_freed == 0

