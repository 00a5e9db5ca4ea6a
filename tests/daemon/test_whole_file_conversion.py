"""An older queue's whole-file artifacts become chunk trees once: every file with its
bytes, mode and mtime, an unfinished copy left out, nothing recorded twice, and a
conversion killed before its log is written done again on the next start."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nvq.daemon.artifacts import whole_file_conversion as conversion
from nvq.daemon.artifacts.chunk_sync import TreeLog, load_tree
from nvq.daemon.machines.blobs import blob_store

MTIME = 1_700_000_000_123_456_789


def store_the_old_way(home: Path, job_id: int, files: dict[str, tuple[bytes, int]]) -> None:
    """As the whole-file sync wrote each file: under a `.name.nvq-part` name, given the
    node's mode and mtime (ns), then renamed over the stored copy."""
    dest = home / "artifacts" / str(job_id)
    for rel, (data, mode) in files.items():
        target = dest / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.nvq-part")
        tmp.write_bytes(data)
        os.chmod(tmp, mode)
        os.utime(tmp, ns=(MTIME, MTIME))
        tmp.replace(target)


FILES = {
    "ckpt/model.pt": (os.urandom(3 * 1024 * 1024) + b"tail", 0o600),
    "run.sh": (b"#!/bin/sh\necho resumed\n", 0o750),
    "notes.txt": (b"step 5\n", 0o644),
}
OWNER = conversion.Owner(attempt=2, node="gpu7")


def test_stored_files_become_one_tree_with_their_bytes_modes_and_times(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store_the_old_way(home, 7, FILES)
    # a copy the old sync never finished, and a job that kept nothing
    (home / "artifacts" / "7" / ".big.pt.nvq-part").write_bytes(b"half")
    (home / "artifacts" / "8").mkdir()
    assert conversion.waiting(home) == [7, 8]

    tree_id = conversion.convert_job(home, 7, OWNER)
    assert conversion.convert_job(home, 8, OWNER) == ""

    store = blob_store(home)
    tree = load_tree(store, tree_id)
    assert tree is not None and not store.missing(sorted(tree.hashes()))
    seen = {e.path: (e.size, e.mode, e.mtime_ns) for e in tree.files()}
    assert seen == {rel: (len(data), mode, MTIME) for rel, (data, mode) in FILES.items()}
    (record,) = TreeLog(home).records(7)
    assert (record.tree, record.attempt, record.node, record.files) == (tree_id, 2, "gpu7", 3)
    assert TreeLog(home).records(8) == []

    # the checkout (`job artifacts`) gives back the very files
    out = tmp_path / "out"
    for entry in tree.files():
        target = out / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(store.read_bytes(c.sha256) for c in entry.chunks))
    assert {rel: (out / rel).read_bytes() for rel in FILES} == {
        rel: data for rel, (data, _) in FILES.items()}
    mode = stat.S_IMODE((home / "artifacts" / "7" / "run.sh").stat().st_mode)
    assert mode == 0o750  # the stored files stay as they were
    assert conversion.waiting(home) == [8]


def test_a_conversion_killed_before_its_log_is_redone_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    store_the_old_way(home, 3, FILES)

    def killed(logs: TreeLog, job_id: int, record: object) -> None:
        # the daemon dies between the chunks and the log, half a line written
        logs.root.mkdir(parents=True, exist_ok=True)
        (logs.root / f".{job_id}.jsonl.converting").write_bytes(b'{"time": 1')
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(conversion, "_write_log", killed)
        with pytest.raises(KeyboardInterrupt):
            conversion.convert_job(home, 3, OWNER)
    assert TreeLog(home).records(3) == [] and conversion.waiting(home) == [3]

    first = conversion.convert_job(home, 3, OWNER)
    assert conversion.waiting(home) == []  # logged: a rerun skips it
    conversion.finish(home)
    (record,) = TreeLog(home).records(3)
    assert record.tree == first
    # the first try's chunks were stored already: none stored twice, none missing
    assert record.chunks_sent == 0 and record.chunks >= 3
    assert conversion.waiting(home) == []
    store_the_old_way(home, 4, FILES)  # the marker says done: no second look
    assert conversion.waiting(home) == []
