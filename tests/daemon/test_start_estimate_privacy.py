"""A running job's progress line is its owner's (members see metadata only): a member's
estimated start must not rest on it, while the owner's does (a real second OS user)."""

from __future__ import annotations

from pathlib import Path

from tests.members import as_user, reachable_nvq, second_user


def test_a_members_estimate_does_not_rest_on_the_owners_progress(tmp_path: Path) -> None:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        go = nvq.home.parent / "go"
        script = (f'sleep 2; echo "epoch 1/100" > "$NVQ_STATUS_FILE"; '
                  f'while [ ! -e {go} ]; do sleep 0.05; done')
        blocker = nvq.submit("--gpus", "2", "--vram", "20GiB", "--timeout", "10h", "--", script)["id"]
        nvq.wait_for(blocker, lambda j: j["progress"] == "epoch 1/100")

        r = as_user(user, nvq, "job", "submit", "--vram", "20GiB", "--json", "--", "true")
        assert r.code == 0, r.err
        theirs = r.json()["id"]
        nvq.wait_for(theirs, lambda j: j["reason"] == "Resources")
        owners = nvq.submit("--vram", "20GiB", "--", "true")["id"]
        nvq.wait_for(owners, lambda j: j["reason"] == "Resources")

        why = as_user(user, nvq, "job", "why", str(theirs), "--json")
        assert why.code == 0, why.err
        rests_on = why.json()["start_estimate"]["rests_on"]
        assert rests_on.startswith(f"when job {blocker}'s timeout ends at "), rests_on
        listed = as_user(user, nvq, "job", "ls", "--json").json()["jobs"]
        for row in listed:
            assert "epoch" not in str(row.get("start_estimate")), row
        # the owner reads their own job's line: their estimate rests on it
        own = nvq.json("job", "why", str(owners))["start_estimate"]["rests_on"]
        assert own.startswith(f"when job {blocker} finishes at its pace ('epoch 1/100'"), own
        go.touch()
