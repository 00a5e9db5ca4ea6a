"""The queue host's disk fills up while jobs run: the daemon stays up and says so, and
once space returns every exit arrives with its real exit code."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import make_nvq


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_queue_host_disk_full_then_freed(small_disk: Path, tmp_path: Path) -> None:
    nvq = make_nvq(small_disk)
    filler = tmp_path / "filler-done"
    try:
        quick = [nvq.submit("--gpus", "0", "--", "sh", "-c", f"sleep 3; exit {i + 2}")
                 for i in range(3)]
        # Fill the disk the queue host keeps its database on.
        hog = small_disk / "hog"
        subprocess.run(["sh", "-c", f"head -c 40000000 /dev/zero > {hog}"],
                       capture_output=True)
        time.sleep(5)  # the three jobs exit while no commit can succeed
        status = nvq.run("queue", "status", timeout=30)
        assert status.code == 0, status.err  # the daemon is still up and answering
        assert "disk full" in status.out
        hog.unlink()
        filler.touch()
        _code, jobs = nvq.wait(*(j["id"] for j in quick), timeout=60)
        assert sorted(j["exit_code"] for j in jobs) == [2, 3, 4]
        assert all(j["state"] == "failed" for j in jobs)
        alerts = nvq.run("queue", "alerts", "--json").json()
        assert any("disk full" in a["message"] for a in alerts), alerts
    finally:
        nvq.shutdown()
