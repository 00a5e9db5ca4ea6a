"""A file that vanishes while `nvq job submit` snapshots its directory (another
program cleaning up, a browser profile in a temp dir) is skipped and named in one
line; the job is submitted with the rest. The vanishing is made exact: a `.gitignore`
that is a FIFO holds the walk inside a subdirectory (its reader waits for this test),
while the test deletes one file already found and one not yet looked at."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.cluster import Nvq


def _open_writer(fifo: Path, proc: subprocess.Popen[str]) -> int:
    """The FIFO's write end, once the walk has opened it to read (the walk then waits)."""
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)


def test_files_that_vanish_during_the_snapshot_are_skipped_and_named(
    nvq: Nvq, tmp_path: Path
) -> None:
    nvq.ok("queue", "status")
    project = tmp_path / "profile"
    (project / "m").mkdir(parents=True)
    (project / "keep.txt").write_text("kept\n")
    (project / "cache-1").write_text("found, then gone before it is read\n")
    (project / "zz-lock").write_text("gone before it is looked at\n")
    os.mkfifo(project / "m" / ".gitignore")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nvq", "job", "submit", "--gpus", "0", "--json", "--", "ls"],
        cwd=project, env=nvq.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    fd = _open_writer(project / "m" / ".gitignore", proc)
    try:
        (project / "cache-1").unlink()
        (project / "zz-lock").unlink()
        (project / "m" / ".gitignore").unlink()  # the walk holds it open
    finally:
        os.close(fd)  # an empty .gitignore: the walk goes on
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("nvq: skipped 2 path(s) that vanished while the snapshot was taken: ")
    assert "cache-1" in line and "zz-lock" in line, line
    job = json.loads(out)
    code, _ = nvq.wait(job["id"])
    assert code == 0
    listed = nvq.ok("job", "logs", str(job["id"])).out.split()
    assert "keep.txt" in listed and "cache-1" not in listed and "zz-lock" not in listed
