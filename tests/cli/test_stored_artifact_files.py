"""A queue home from before chunk trees, whose job's artifacts are whole files under
`$NVQ_HOME/artifacts/<id>/`: after the daemon's next start `job artifacts` lists the
same files, the job's next attempt finds them in `$NVQ_ARTIFACTS`, and `job pull`
brings them back while it runs."""

from __future__ import annotations

from pathlib import Path

from nvq.daemon.artifacts.whole_file_conversion import done_marker
from tests.cluster import Nvq
from tests.daemon.test_whole_file_conversion import MTIME, store_the_old_way

FILES = {"ckpt/step": (b"5\n", 0o600), "run.sh": (b"#!/bin/sh\n", 0o750)}


def body(gate: Path) -> str:
    """Attempt 2 prints the checkpoint, then waits until the test has pulled."""
    return (f'if [ "$NVQ_ATTEMPT" = 2 ]; then cat "$NVQ_ARTIFACTS/ckpt/step"; '
            f'touch {gate}.in; while [ ! -e {gate}.out ]; do sleep 0.1; done; fi')


def test_an_older_queues_stored_files_follow_the_job(nvq: Nvq, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    job = nvq.submit("--gpus", "0", "--", body(gate))
    assert nvq.wait(job["id"])[0] == 0
    assert nvq.json("job", "artifacts", str(job["id"]))["files"] == []
    nvq.ok("daemon", "stop")
    # the home as an older queue left it: files, and no conversion done yet
    store_the_old_way(nvq.home, job["id"], FILES)
    done_marker(nvq.home).unlink()

    listed = nvq.json("job", "artifacts", str(job["id"]))
    assert [(f["path"], f["size"]) for f in listed["files"]] == [
        ("ckpt/step", 2), ("run.sh", 10)]
    assert {round(f["mtime"], 3) for f in listed["files"]} == {round(MTIME / 1e9, 3)}
    assert len(nvq.show(job["id"])["artifact_syncs"]) == 1

    nvq.ok("job", "requeue", str(job["id"]), "--artifacts", "keep")
    nvq.wait_for(job["id"], lambda j: j["attempt"] == 2 and (tmp_path / "gate.in").exists())
    back = tmp_path / "back"
    nvq.json("job", "pull", str(job["id"]), "--to", str(back))
    assert (back / "artifacts" / "ckpt" / "step").read_text() == "5\n"
    assert (back / "artifacts" / "run.sh").stat().st_mode & 0o777 == 0o750
    (tmp_path / "gate.out").touch()
    code, (again,) = nvq.wait(job["id"])
    assert code == 0 and again["attempt"] == 2
    assert nvq.ok("job", "logs", str(job["id"])).out == "5\n"
