"""`--setup`: a job's environment built once per node and key, through the real CLI."""

from __future__ import annotations

import time
from pathlib import Path

from tests.cluster import Nvq

SETUP = (
    'echo built >> "$COUNT"; mkdir -p "$NVQ_ENV_DIR/bin"; '
    "printf '#!/bin/sh\\necho tool-from-env\\n' > \"$NVQ_ENV_DIR/bin/mytool\"; "
    'chmod +x "$NVQ_ENV_DIR/bin/mytool"'
)


def test_setup_runs_once_per_key_and_again_when_requirements_change(
    nvq: Nvq, tmp_path: Path,
) -> None:
    assert nvq.cwd is not None
    count = tmp_path / "setups"
    (nvq.cwd / "requirements.txt").write_text("numpy\n")
    ids = [nvq.submit("--gpus", "0", "--env", f"COUNT={count}", "--setup", SETUP, "--",
                      "mytool")["id"] for _ in range(10)]
    code, done = nvq.wait(*ids, timeout=120)
    assert code == 0, done
    assert count.read_text() == "built\n"
    assert "tool-from-env" in nvq.ok("job", "logs", str(ids[0])).out

    (nvq.cwd / "requirements.txt").write_text("numpy\ntorch\n")
    again = nvq.submit("--gpus", "0", "--env", f"COUNT={count}", "--setup", SETUP, "--",
                       "mytool")
    assert nvq.wait(again["id"])[0] == 0
    assert count.read_text() == "built\nbuilt\n"
    assert nvq.ok("job", "logs", str(again["id"]), "--setup").out.startswith("$ echo built")


def test_a_failing_setup_fails_the_job_with_its_log(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--retries", "2", "--setup",
                     "echo cannot-install-torch >&2; exit 3", "--", "echo never")
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed"
    assert done["reason"].startswith("setup `echo cannot-install-torch >&2; exit 3` failed (exit 3)")
    assert "cannot-install-torch" in done["reason"]
    assert done["attempt"] == 1  # a setup failure spends no --retries
    kinds = [e["kind"] for e in nvq.events() if e["job_id"] == job["id"]]
    assert "setup_started" in kinds and kinds[-1] == "setup_failed", kinds
    assert "cannot-install-torch" in nvq.ok("job", "logs", str(job["id"]), "--setup").out
    assert "never" not in nvq.ok("job", "logs", str(job["id"])).out
    # not cached: the next job with the same setup tries again
    retry = nvq.submit("--gpus", "0", "--setup", "echo cannot-install-torch >&2; exit 3",
                       "--", "echo never")
    assert nvq.wait(retry["id"])[0] == 1
    assert "cannot-install-torch" in nvq.ok("job", "logs", str(retry["id"]), "--setup").out


def test_a_job_shows_the_setup_state_while_its_setup_runs(nvq: Nvq, tmp_path: Path) -> None:
    go = tmp_path / "go"
    job = nvq.submit("--gpus", "1", "--setup",
                     f"echo installing; while [ ! -e {go} ]; do sleep 0.05; done",
                     "--", "echo trained")
    shown = nvq.wait_for(job["id"], lambda j: j.get("phase") == "setup")
    assert shown["state"] == "running" and shown["gpus"]  # its card is held meanwhile
    row = next(line for line in nvq.ok("job", "ls").out.splitlines()
               if line.split()[0] == str(job["id"]))
    assert row.split()[1] == "setup"
    assert "[setup]" in nvq.ok("job", "show", str(job["id"])).out
    # its log is followed while it runs: wait for the line it printed
    deadline = time.monotonic() + 60
    while "installing" not in nvq.ok("job", "logs", str(job["id"]), "--setup").out:
        assert time.monotonic() < deadline, "the setup's log never showed its line"
        time.sleep(0.1)
    go.touch()
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["phase"] == ""
    kinds = [e["kind"] for e in nvq.events() if e["job_id"] == job["id"]]
    assert kinds.index("setup_started") < kinds.index("setup_done") < kinds.index("job_started")
    assert nvq.ok("job", "logs", str(job["id"]), "--setup").out.endswith("\ninstalling\n")
