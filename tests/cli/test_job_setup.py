"""`--setup`: a job's environment built once per node and key, through the real CLI."""

from __future__ import annotations

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
    job = nvq.submit("--gpus", "0", "--setup", "echo cannot-install-torch >&2; exit 3",
                     "--", "echo never")
    code, (done,) = nvq.wait(job["id"])
    assert code == 1 and done["state"] == "failed"
    assert "setup failed (exit 3)" in done["reason"]
    assert "cannot-install-torch" in done["reason"]
    assert "cannot-install-torch" in nvq.ok("job", "logs", str(job["id"]), "--setup").out
    assert "never" not in nvq.ok("job", "logs", str(job["id"])).out
    # not cached: the next job with the same setup tries again
    retry = nvq.submit("--gpus", "0", "--setup", "echo cannot-install-torch >&2; exit 3",
                       "--", "echo never")
    assert nvq.wait(retry["id"])[0] == 1
    assert "cannot-install-torch" in nvq.ok("job", "logs", str(retry["id"]), "--setup").out
