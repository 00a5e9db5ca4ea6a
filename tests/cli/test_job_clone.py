"""`nvq job clone ID` (gflow's `gjob redo`): a new job asking for what job ID asked for,
its command, environment and snapshot of the submit directory, checked as a submit;
job ID is left as it was."""

from __future__ import annotations

from tests.cluster import Nvq


def test_a_clone_runs_what_the_job_asked_for_in_its_world(nvq: Nvq) -> None:
    nvq.nodes_up()
    assert nvq.cwd is not None  # the submit directory the snapshot is taken of
    (nvq.cwd / "data.txt").write_text("from the snapshot\n")
    first = nvq.submit("--gpus", "0", "--name", "twice", "--env", "LR=0.1", "--tag", "t",
                       "--", "sh", "-c", "cat data.txt; echo $LR")
    assert nvq.wait(first["id"])[0] == 0
    (nvq.cwd / "data.txt").write_text("changed since\n")  # the clone takes the snapshot
    said = nvq.ok("job", "clone", str(first["id"]))
    again = int(said.out.split()[2])
    assert said.out == f"submitted job {again} (twice), a copy of job {first['id']}\n"
    assert nvq.wait(again)[0] == 0
    assert nvq.ok("job", "logs", str(again)).out == "from the snapshot\n0.1\n"
    copy, before = nvq.show(again), nvq.show(first["id"])
    for field in ("name", "command", "env", "tags", "gpus_requested", "manifest_id", "cwd"):
        assert copy[field] == before[field], field
    assert before["attempt"] == 1 and before["state"] == "completed"
    doc = nvq.json("job", "clone", str(first["id"]))
    assert doc["id"] == again + 1 and doc["env_captured"] is None


def test_a_missing_job_is_bad_input_and_changes_nothing(nvq: Nvq) -> None:
    missing = nvq.run("job", "clone", "999")
    assert (missing.code, missing.err) == (2, "nvq: no job with id 999\n")
    assert nvq.run("job", "clone", "x").code == 2
    assert nvq.json("job", "ls")["jobs"] == []
