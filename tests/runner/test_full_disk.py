"""A full disk on the node: the launch fails with a clear reason, and no event is
sent before it is journaled."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvq_runner.protocol import Ack, JobExited, JobStarted, LaunchFailed
from tests.runner.test_live import Node, job


@pytest.fixture
def small_disk(node: Node) -> Iterator[Path]:
    """A 2 MiB tmpfs holding the runner's jobs and journal (its log stays outside)."""
    disk = Path(tempfile.mkdtemp(prefix="nvqd", dir="/tmp"))
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        disk.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {mount.stderr.strip()}")
    try:
        for name in ("jobs", "journal"):
            (disk / name).mkdir()
            (node.home / name).symlink_to(disk / name)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
        with contextlib.suppress(OSError):
            disk.rmdir()


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
        while True:
            f.write(b"\0" * 4096)
    return filler


def test_launch_on_a_full_disk(node: Node, small_disk: Path) -> None:
    node.start()
    c, _ = node.hello()
    go = node.home / "go"
    c.send(job(1, f"while [ ! -e {go} ]; do sleep 0.05; done; exit 6"))
    assert c.expect(JobStarted, job_id=1).seq == 1
    c.send(Ack(seq=1))  # the journal's log is emptied: its next record needs new space
    c.events(0.3)
    filler = fill(small_disk)

    c.send(job(2, "echo never"))
    # The failure cannot be journaled yet, so it is not sent either.
    assert c.events(1.5) == []
    filler.unlink()
    failed = c.expect(LaunchFailed, job_id=2, timeout=60)
    assert failed.seq == 2
    assert failed.error == f"no space left on the node's disk ({node.home / 'jobs' / '2'})"

    go.touch()
    assert c.expect(JobExited, job_id=1).exit_code == 6
    c2, hello = node.hello()
    assert hello.journal_head == 3
    replay = c2.events(1)
    assert [(type(e), e.seq) for e in replay] == [(LaunchFailed, 2), (JobExited, 3)]  # type: ignore[union-attr]
