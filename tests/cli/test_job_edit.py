"""`nvq job edit ID --vram ...`: a waiting job's request can change, checked as at
submit, with an event holding the values before and after; a running job can
change only its name, note, tags and priority."""

from __future__ import annotations

from tests.cluster import Nvq


def test_a_waiting_job_changes_what_it_asks_for(nvq: Nvq) -> None:
    nvq.nodes_up()  # "no node could ever hold" is known once the node has said hello
    job = nvq.submit("--gpus", "0", "--name", "old", "--", "sleep 30")
    nvq.ok("job", "pause", str(job["id"]))
    r = nvq.ok("job", "edit", str(job["id"]), "--vram", "2GiB", "--gpus", "1", "--name", "new")
    assert r.out == f"job {job['id']} paused, changed --vram, --gpus, --name\n"
    edited = nvq.json(
        "job", "edit", str(job["id"]), "--timeout", "5 minutes", "--tag", "a", "--tag", "b",
        "--env", "LR=0.1", "--command", "echo edited", "--priority", "3",
    )  # fmt: skip
    assert (edited["vram_mb"], edited["gpus_requested"], edited["name"]) == (2048, 1, "new")
    assert (edited["timeout"], edited["tags"], edited["env"]) == (300, ["a", "b"], {"LR": "0.1"})
    assert (edited["command"], edited["priority"]) == ("echo edited", 3)
    changes = [e["data"] for e in nvq.show(job["id"])["events"] if e["kind"] == "job_changed"]
    assert changes[0]["before"] == {"vram_mb": 0, "gpus_requested": 0, "name": "old"}
    assert changes[0]["after"] == {"vram_mb": 2048, "gpus_requested": 1, "name": "new"}
    # checked as at submit: a bad value, or one no node could ever hold, changes nothing
    bad = nvq.run("job", "edit", str(job["id"]), "--gpus", "-1")
    assert bad.code != 0 and "--gpus" in bad.err
    never = nvq.run("job", "edit", str(job["id"]), "--gpus", "3")
    assert never.code == 2 and "needs 3 GPUs" in never.err
    assert nvq.show(job["id"])["gpus_requested"] == 1
    nvq.ok("job", "resume", str(job["id"]))
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and done["command"] == "echo edited"
    assert nvq.ok("job", "logs", str(job["id"])).out == "edited\n"


def test_a_running_job_changes_only_its_labels_and_priority(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "sleep 30")
    nvq.wait_for(job["id"], lambda j: j["state"] == "running")
    r = nvq.json("job", "edit", str(job["id"]), "--name", "renamed", "--note", "why")
    assert (r["name"], r["note"], r["state"]) == ("renamed", "why", "running")
    refused = nvq.run("job", "edit", str(job["id"]), "--vram", "1GiB", "--command", "true")
    assert refused.code == 1
    assert refused.err == (
        f"nvq: job {job['id']} is running: only --priority --name --note --tag --notify-on "
        f"can change now, not --vram --command; `nvq job requeue {job['id']}` after it ends, "
        "or cancel it and submit it again\n"
    )
    nvq.ok("job", "cancel", str(job["id"]))
