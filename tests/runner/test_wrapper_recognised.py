"""After a runner restart, an attempt whose record has no pid yet is found by its
wrapper process: the installed wrapper, or the copy a job run as another user runs
from its own directory. A process of another job directory, or another script in the
same one, is not taken."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nvq_runner.adoption import is_wrapper
from nvq_runner.jobfiles import JobDir
from nvq_runner.spawn import WRAPPER, WRAPPER_COPY

Run = Callable[[Path, JobDir], int]


@pytest.fixture
def job_dir(tmp_path: Path) -> JobDir:
    d = JobDir(tmp_path / "jobs", 7)
    d.path.mkdir(parents=True)
    d.script.write_text("sleep 30\n")
    return d


@pytest.fixture
def run() -> Iterator[Run]:
    """Start `/bin/sh <script> <job dir> 0022` as the runner does, in its own session."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(script: Path, d: JobDir) -> int:
        p = subprocess.Popen(["/bin/sh", str(script), str(d.path), "0022"],
                             start_new_session=True)
        procs.append(p)
        # Popen returns once exec has begun; the kernel sets up the new command line
        # a moment later, and until then /proc shows it empty.
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{p.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the process never showed a command line"
            time.sleep(0.01)
        return p.pid

    yield start
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_the_installed_wrapper_is_recognised(job_dir: JobDir, run: Run, tmp_path: Path) -> None:
    pid = run(WRAPPER, job_dir)
    assert is_wrapper(pid, job_dir)
    assert not is_wrapper(pid, JobDir(tmp_path / "jobs", 8))


def test_the_copy_a_member_runs_is_recognised(job_dir: JobDir, run: Run, tmp_path: Path) -> None:
    copy = job_dir.path / WRAPPER_COPY
    copy.write_bytes(WRAPPER.read_bytes())
    pid = run(copy, job_dir)
    assert is_wrapper(pid, job_dir)
    assert not is_wrapper(pid, JobDir(tmp_path / "jobs", 8))


def test_another_script_in_the_job_directory_is_not(job_dir: JobDir, run: Run) -> None:
    assert not is_wrapper(run(job_dir.script, job_dir), job_dir)
