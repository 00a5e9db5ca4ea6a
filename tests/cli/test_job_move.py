"""`nvq job move ID NODE[:GPU]`: a waiting job is pinned there; a running one is
stopped, its artifacts synced, and it runs there as a new attempt, with an event."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import Nvq


def test_a_waiting_job_is_pinned_to_the_card(nvq: Nvq) -> None:
    blocker = nvq.submit("--gpus", "2", "--vram", "20GiB", "--", "sleep 60")  # fills both
    nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    job = nvq.submit("--gpus", "1", "--vram", "20GiB", "--", "true")
    r = nvq.ok("job", "move", str(job["id"]), "local:1")
    assert r.out == f"job {job['id']} pending, moved to local:1\n"
    shown = nvq.show(job["id"])
    assert (shown["lane"], shown["state"], shown["attempt"]) == ("local:1", "pending", 0)
    (moved,) = [e["data"] for e in shown["events"] if e["kind"] == "job_moved"]
    assert moved["before"]["lane"] is None and moved["after"]["lane"] == "local:1"
    # where it cannot go is the user's to fix: exit 2, nothing changes
    unknown = nvq.run("job", "move", str(job["id"]), "nowhere")
    assert unknown.code == 2
    assert unknown.err == "nvq: no node named 'nowhere' (nodes: local)\n"
    card = nvq.run("job", "move", str(job["id"]), "local:7")
    assert card.code == 2
    assert card.err == "nvq: move to 'local:7': node local has no GPU 7 (GPUs: 0, 1)\n"
    as_json = nvq.json("job", "move", str(job["id"]), "local")
    assert (as_json["to"], as_json["stopped"], as_json["lane"]) == ("local", None, None)
    assert as_json["node_request"] == "local"
    nvq.ok("job", "move", str(job["id"]), "local:1")
    nvq.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["gpus"] == [1]


def test_a_running_job_is_stopped_and_runs_there_as_a_new_attempt(
    nvq: Nvq, tmp_path: Path
) -> None:
    gate = tmp_path / "started"
    # First attempt: checkpoint, then wait to be stopped. The next one resumes from
    # the checkpoint the queue synced and restored.
    body = (
        'ck="$NVQ_ARTIFACTS/step"; '
        'if [ -f "$ck" ]; then echo "resumed at $(cat "$ck")"; exit 0; fi; '
        f'echo 5 > "$ck"; touch {gate}; sleep 60'
    )
    job = nvq.submit("--gpus", "1", "--", body)
    running = nvq.wait_for(job["id"], lambda j: j["state"] == "running" and gate.exists())
    other = 1 - running["gpus"][0]
    r = nvq.ok("job", "move", str(job["id"]), f"local:{other}")
    assert r.out == (
        f"job {job['id']}: attempt 1 on local stopped; it runs on local:{other} as a new attempt\n"
    )
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and (done["gpus"], done["attempt"]) == ([other], 2)
    assert nvq.ok("job", "logs", str(job["id"])).out == "resumed at 5\n"
    shown = nvq.show(job["id"])
    outcomes = [(a["gpus"], a["outcome"]) for a in shown["attempts"]]
    assert outcomes == [(running["gpus"], "moved"), ([other], "completed")]
    assert shown["attempts"][0]["reason"] == f"moved to local:{other} by {done['user']}"
    # the artifacts were synced to the queue host as on any reassignment (attempt 2's
    # own last sync lands after the job ended: wait for it so nothing changes under us)
    nvq.wait_for(job["id"], lambda j: any(s["attempt"] == 2 for s in j.get("artifact_syncs") or []))
    listed = nvq.json("job", "artifacts", str(job["id"]))
    assert (Path(listed["dir"]) / "step").read_text() == "5\n"
    again = nvq.run("job", "move", str(job["id"]), "local")
    assert again.code == 1 and again.err == f"nvq: job {job['id']} has already ended (completed)\n"
