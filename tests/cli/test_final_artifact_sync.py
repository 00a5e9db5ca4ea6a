"""An attempt's end syncs its artifacts unless there is nothing on either side: the
runner says the folder was empty and the queue host holds nothing of the job."""

from __future__ import annotations

from tests.cluster import Nvq

# attempt 1 leaves a checkpoint, attempt 2 removes it
BODY = (
    'if [ "$NVQ_ATTEMPT" = 1 ]; then echo 1 > "$NVQ_ARTIFACTS/ckpt"; '
    'else rm "$NVQ_ARTIFACTS/ckpt" && echo removed; fi'
)


def test_an_emptied_artifacts_folder_still_syncs_its_emptiness(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", BODY)
    assert nvq.wait(job["id"])[0] == 0
    nvq.wait_for(job["id"], lambda j: len(j.get("artifact_syncs") or []) == 1)
    listed = nvq.json("job", "artifacts", str(job["id"]))
    assert [f["path"] for f in listed["files"]] == ["ckpt"]

    nvq.json("job", "requeue", str(job["id"]), "--artifacts", "keep")
    code, (again,) = nvq.wait(job["id"])
    assert code == 0 and again["attempt"] == 2
    assert nvq.ok("job", "logs", str(job["id"])).out == "removed\n"
    nvq.wait_for(job["id"], lambda j: len(j.get("artifact_syncs") or []) == 2)
    assert nvq.json("job", "artifacts", str(job["id"]))["files"] == []


def test_a_job_that_kept_nothing_has_no_sync_and_no_files(nvq: Nvq) -> None:
    job = nvq.submit("--gpus", "0", "--", "echo hi")
    assert nvq.wait(job["id"])[0] == 0
    shown = nvq.show(job["id"])
    assert not shown.get("artifact_syncs")
    assert nvq.json("job", "artifacts", str(job["id"]))["files"] == []
