"""Whatever umask the runner is started with, what it writes is its owner's alone;
jobs still get that umask for their own files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from nvq_runner.protocol import ArtifactsManifest, ArtifactsQuery, JobExited
from tests.runner.test_live import Node, job


def modes_under(root: os.PathLike[str]) -> dict[str, int]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.basename(dirpath) == "artifacts":
            dirnames.clear()  # the job's own files
            filenames = []
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = os.lstat(path).st_mode
    return out


def test_runner_files_are_private_under_umask_000(node: Node) -> None:
    subprocess.run([sys.executable, "-m", "nvq_runner", "start", "--home", str(node.home)],
                   env={**os.environ, **node.env}, check=True, timeout=20, umask=0)
    c, _ = node.hello()
    c.send(job(1, 'umask; echo "1/2" > "$NVQ_STATUS_FILE"; echo oops >&2\n'
                  'echo \'{"a": 1}\' > "$NVQ_JOB_DIR/result.json"\n'
                  'echo w > "$NVQ_ARTIFACTS/ckpt"; chmod 600 "$NVQ_ARTIFACTS/ckpt"'))
    assert c.expect(JobExited, job_id=1).exit_code == 0
    c.send(ArtifactsQuery(req=1, job_id=1))
    (ckpt,) = c.expect(ArtifactsManifest, req=1).files
    assert (ckpt.path, ckpt.mode) == ("ckpt", 0o600)

    found = modes_under(node.home)
    for name in ("runner.sock", "runner.log", "runner.lock", "journal/events.log",
                 "jobs/1/stdout.log", "jobs/1/stderr.log", "jobs/1/status",
                 "jobs/1/result.json", "jobs/1/script", "jobs/1/exit", "jobs/1/attempt.json"):
        assert name in found
    wide = {name: oct(stat.S_IMODE(mode)) for name, mode in found.items()
            if stat.S_IMODE(mode) != (0o700 if stat.S_ISDIR(mode) else 0o600)}
    assert wide == {}
    assert stat.S_IMODE(node.home.stat().st_mode) == 0o700
    # The job itself ran with the umask the runner was given.
    assert (node.home / "jobs" / "1" / "stdout.log").read_text() == "0000\n"
