"""`job submit --kill-on-invalid-dep` (Slurm's): a job whose `--after` prerequisite
ends badly is cancelled, not held for a person; its own dependents then meet the
same rule, and a job without the flag is still held."""

from __future__ import annotations

from tests.cluster import Nvq


def test_a_bad_prerequisite_cancels_the_jobs_that_asked(nvq: Nvq) -> None:
    nvq.nodes_up()
    gate = nvq.home.parent / "gate"
    first = nvq.submit("--gpus", "0", "--", f"while [ ! -e {gate} ]; do sleep 0.1; done; exit 3")
    killed = nvq.submit("--gpus", "0", "--after", str(first["id"]), "--kill-on-invalid-dep",
                        "--", "true")
    assert killed["kill_on_invalid_dep"] is True
    behind = nvq.submit("--gpus", "0", "--after", str(killed["id"]), "--", "true")
    held = nvq.submit("--gpus", "0", "--after", str(first["id"]), "--", "true")
    gate.touch()
    nvq.wait(first["id"])
    gone = nvq.wait_for(killed["id"], lambda j: j["state"] == "cancelled")
    assert gone["reason"] == (
        f"cancelled: prerequisite {first['id']} ended failed (--kill-on-invalid-dep)"
    )
    (event,) = [e for e in gone["events"] if e["kind"] == "job_cancelled"]
    assert event["data"] == {"by": "queue", "after": first["id"], "state": "failed"}
    assert nvq.wait_for(held["id"], lambda j: j["state"] == "held")["started_at"] is None
    # its dependent without the flag is held on it, as on any bad end
    on_killed = nvq.wait_for(behind["id"], lambda j: j["state"] == "held")
    assert f"prerequisite {killed['id']} ended cancelled" in on_killed["why"]
    # submitted after the prerequisite failed: the submit says what will happen
    late = nvq.run("job", "submit", "--gpus", "0", "--after", str(first["id"]),
                   "--kill-on-invalid-dep", "--", "true")
    assert late.code == 0
    assert late.out.endswith(
        f"; to be cancelled: job {first['id']} failed (--kill-on-invalid-dep)\n")
    late_id = int(late.out.split()[2])
    assert nvq.wait_for(late_id, lambda j: j["state"] == "cancelled")["exit_code"] is None


def test_a_manifest_asks_for_it_too(nvq: Nvq) -> None:
    manifest = nvq.home.parent / "manifest.toml"
    manifest.write_text('[job]\ncommand = "true"\ngpus = 0\nkill_on_invalid_dep = true\n')
    assert nvq.json("job", "submit", "--manifest", str(manifest))["kill_on_invalid_dep"] is True
    manifest.write_text('[job]\ncommand = "true"\nkill_on_invalid_dep = "yes"\n')
    bad = nvq.run("job", "submit", "--manifest", str(manifest))
    assert (bad.code, bad.err) == (
        2, f'nvq: {manifest}: job.kill_on_invalid_dep: expected true or false, got "yes"\n')
