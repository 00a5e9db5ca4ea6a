"""`nvq job requeue` keeps what earlier attempts did (results, logs), asks which
artifacts the next attempt starts from, and `--edit` changes the command first."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq

# Resumes from its checkpoint if there is one; writes its result and a checkpoint.
BODY = (
    'ck="$NVQ_ARTIFACTS/step"; s=$(cat "$ck" 2>/dev/null || echo 0); s=$((s+1)); '
    'echo $s > "$ck"; echo "run $NVQ_ATTEMPT from $s"; '
    'echo "{\\"step\\": $s}" > "$NVQ_JOB_DIR/result.json"'
)


def stored_step(nvq: Nvq, job_id: int) -> str:
    """`step` as the queue host stored it (`job artifacts` checks it out)."""
    listed = nvq.json("job", "artifacts", str(job_id))
    return (Path(listed["dir"]) / "step").read_text().strip()


def synced(nvq: Nvq, job_id: int, attempt: int = 1) -> None:
    """Wait for the queue host to hold `attempt`'s artifacts: an attempt's last sync
    lands after the job has ended, so `job wait` alone does not say they are there."""
    nvq.wait_for(
        job_id, lambda j: any(s["attempt"] == attempt for s in j.get("artifact_syncs") or [])
    )


def test_requeue_of_a_completed_job_starts_fresh_and_keeps_the_first_result(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", BODY)
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["result"] == {"step": 1}
    synced(nvq, job["id"])
    r = nvq.ok("job", "requeue", str(job["id"]))
    kept = nvq.home / "artifacts" / f"{job['id']}-attempt-1"
    assert r.out == f"job {job['id']} requeued (artifacts: fresh, attempt 1's set aside in {kept})\n"
    code, (again,) = nvq.wait(job["id"])
    # a fresh start: step 1 again, not 2; the first checkpoint is set aside, not lost
    assert code == 0 and again["result"] == {"step": 1} and again["attempt"] == 2
    assert (kept / "step").read_text().strip() == "1"
    shown = nvq.show(job["id"])
    assert [(a["attempt"], a["result"]) for a in shown["attempts"]] == [
        (1, {"step": 1}),
        (2, {"step": 1}),
    ]
    (event,) = [e for e in shown["events"] if e["kind"] == "job_requeued"]
    assert (event["data"]["artifacts"], event["data"]["result"]) == ("fresh", {"step": 1})
    assert nvq.ok("job", "logs", str(job["id"]), "--attempt", "1").out == "run 1 from 1\n"
    text = nvq.ok("job", "show", str(job["id"])).out
    first = next(ln for ln in text.splitlines() if ln.lstrip().startswith("#1 "))
    assert "completed (exit 0)" in first and first.endswith('; result {"step": 1}'), text


def test_requeue_keeps_the_checkpoint_when_asked_and_json_says_which(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", BODY)
    nvq.wait(job["id"])
    synced(nvq, job["id"])
    doc = nvq.json("job", "requeue", str(job["id"]), "--artifacts", "keep")["jobs"]
    assert [(d["id"], d["artifacts"], d["artifacts_kept"]) for d in doc] == [
        (job["id"], "keep", None)
    ]
    code, (again,) = nvq.wait(job["id"])
    assert code == 0 and again["result"] == {"step": 2}
    synced(nvq, job["id"], attempt=2)
    assert stored_step(nvq, job["id"]) == "2"
    bad = nvq.run("job", "requeue", str(job["id"]), "--artifacts", "some")
    assert bad.code == 2 and bad.err == "nvq: --artifacts some: expected keep or fresh\n"


def test_requeue_edit_opens_the_command_in_the_editor(nvq: Nvq, tmp_path: Path) -> None:
    job = nvq.submit("--gpus", "0", "--", "echo before")
    nvq.wait(job["id"])
    editor = tmp_path / "editor.sh"
    # An editor that replaces the first line of the file it is given.
    editor.write_text('#!/bin/sh\nsed -i "1s/.*/echo after/" "$1"\n')
    editor.chmod(0o755)
    nvq.env["EDITOR"] = str(editor)
    r = nvq.ok("job", "requeue", str(job["id"]), "--edit")
    assert r.out == f"job {job['id']} requeued (artifacts: fresh)\n"
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["command"] == "echo after"
    assert nvq.ok("job", "logs", str(job["id"])).out == "after\n"
    changed = [e["data"] for e in nvq.show(job["id"])["events"] if e["kind"] == "job_changed"]
    assert changed[0]["before"] == {"command": "echo before"}
    # an editor that empties it cancels: nothing is requeued
    editor.write_text('#!/bin/sh\n: > "$1"\n')
    empty = nvq.run("job", "requeue", str(job["id"]), "--edit")
    assert empty.code == 1 and empty.err == "nvq: requeue cancelled: the command is empty\n"
    assert nvq.show(job["id"])["state"] == "completed"
    two = nvq.run("job", "requeue", str(job["id"]), "1", "--edit")
    assert two.code == 2 and "give one id" in two.err
