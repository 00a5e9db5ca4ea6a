"""The queue host's disk fills up while jobs run: the daemon stays up and says so, and
once space returns every exit arrives with its real exit code."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Nvq, make_nvq


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
    gate = tmp_path / "disk-is-full"
    ended = [tmp_path / f"ended-{i}" for i in range(3)]
    try:
        quick = [
            nvq.submit("--gpus", "0", "--", "sh", "-c",
                       f"while [ ! -e {gate} ]; do sleep 0.05; done; touch {ended[i]}; exit {i + 2}")
            for i in range(3)
        ]
        for j in quick:
            nvq.wait_for(j["id"], lambda x: x["state"] == "running")
        # Fill the disk the queue host keeps its database on.
        hog = small_disk / "hog"
        subprocess.run(["sh", "-c", f"head -c 40000000 /dev/zero > {hog}"],
                       capture_output=True)
        gate.touch()  # the three jobs exit while no commit can succeed
        deadline = time.monotonic() + 60
        while not all(e.exists() for e in ended):
            assert time.monotonic() < deadline, "the jobs never ended"
            time.sleep(0.05)
        while True:  # the daemon is still up and answering, and says why nothing lands
            status = nvq.run("queue", "status", timeout=30)
            assert status.code == 0, status.err
            if "disk full" in status.out:
                break
            assert time.monotonic() < deadline, status.out
            time.sleep(0.2)
        hog.unlink()
        filler.touch()
        _code, jobs = nvq.wait(*(j["id"] for j in quick), timeout=60)
        assert sorted(j["exit_code"] for j in jobs) == [2, 3, 4]
        assert all(j["state"] == "failed" for j in jobs)
        # The disk watcher raises its alert on its own pass once space is back, which
        # may come after the jobs' exits landed: wait for it.
        deadline = time.monotonic() + 60
        while True:
            alerts = nvq.run("queue", "alerts", "--all", "--json").json()["alerts"]
            if any("disk full" in a["message"] for a in alerts):
                break
            assert time.monotonic() < deadline, alerts
            time.sleep(0.2)
    finally:
        nvq.shutdown()


def test_submit_and_cancel_on_a_full_disk_answer_at_once(small_disk: Path) -> None:
    nvq = make_nvq(small_disk)
    assert nvq.cwd is not None
    (nvq.cwd / "train.py").write_text("print('hi')\n")  # a project to snapshot
    try:
        job = nvq.submit("--gpus", "0", "--", "sleep", "600")
        nvq.wait_for(job["id"], lambda j: j["state"] == "running")
        hog = small_disk / "hog"
        subprocess.run(["sh", "-c", f"head -c 40000000 /dev/zero > {hog}"],
                       capture_output=True)
        _until_status_says(nvq, "disk full")
        r = nvq.run("job", "submit", "--gpus", "0", "--", "true")
        assert r.code != 0
        assert r.err.count("\n") == 1 and "disk is full" in r.err, r.err
        # The cancel is answered, not left waiting for a write that cannot land.
        r = nvq.run("job", "cancel", str(job["id"]), timeout=60)
        assert r.code == 0, r.err
        assert r.out.strip() == f"job {job['id']}: cancel recorded; written when the disk has room"
        assert nvq.show(job["id"])["state"] == "running"  # nothing written, nothing killed
        hog.unlink()
        ended = nvq.wait_for(job["id"], lambda j: j["state"] != "running", timeout=60)
        assert ended["state"] == "cancelled"
    finally:
        nvq.shutdown()


def _until_status_says(nvq: Nvq, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while text not in nvq.ok("queue", "status").out:
        assert time.monotonic() < deadline, f"queue status never said {text!r}"
        time.sleep(0.1)
