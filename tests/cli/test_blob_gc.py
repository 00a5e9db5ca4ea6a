"""The queue host's snapshot store: what purge and `queue gc` free, and what they keep."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from tests.cluster import Nvq


def blob(home: Path, content: bytes) -> Path:
    digest = hashlib.sha256(content).hexdigest()
    return home / "blobs" / "objects" / digest[:2] / digest[2:]


def age_the_store(home: Path) -> None:
    """As if every object had been stored two hours ago (past the submit grace)."""
    old = time.time() - 7200
    for path in (home / "blobs" / "objects").rglob("*"):
        if path.is_file():
            os.utime(path, (old, old))


def test_purge_frees_the_snapshots_no_job_uses_and_gc_reports(nvq: Nvq) -> None:
    assert nvq.cwd is not None
    (nvq.cwd / "config.yaml").write_text("lr: 0.1\n")
    done = nvq.submit("--gpus", "0", "--", "cat config.yaml")
    assert nvq.wait(done["id"])[0] == 0
    (nvq.cwd / "config.yaml").write_text("lr: 0.2\n")
    blocker = nvq.submit("--gpus", "0", "--no-snapshot", "--", "sleep 600")
    waiting = nvq.submit("--gpus", "0", "--after-any", str(blocker["id"]), "--", "true")
    first, second = blob(nvq.home, b"lr: 0.1\n"), blob(nvq.home, b"lr: 0.2\n")
    assert first.exists() and second.exists()
    age_the_store(nvq.home)

    nvq.ok("job", "purge", "--yes")
    assert not first.exists(), "the purged job's own file is freed"
    assert second.exists(), "a waiting job's snapshot is kept"
    report = nvq.json("queue", "gc")
    assert report["objects_freed"] == 0
    assert report["objects_kept"] == 2  # the waiting job's config.yaml and its manifest
    assert "freed 0 snapshot objects" in nvq.ok("queue", "gc").out
    nvq.ok("job", "cancel", str(blocker["id"]), str(waiting["id"]))
