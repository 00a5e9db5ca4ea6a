"""A job talks to the queue that runs it: `nvq` inside a job reaches its own queue
through `$NVQ_SOCKET`, which the runner relays to the daemon, on a node reached over
SSH with nothing installed there by hand."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.test_job_world import logs
from tests.cluster import Nvq
from tests.harness.sshd import SshdNode
from tests.members import as_user, reachable_nvq, second_user

SWEEP_DRIVER = r"""
set -e
ids=""
for lr in 0.1 0.01 0.001; do
  id=$(nvq job submit --json --gpus 0 --name "trial-$lr" -- \
    "python3 -c 'import json,os; json.dump({\"lr\": $lr, \"loss\": abs($lr - 0.01)}, open(os.environ[\"NVQ_JOB_DIR\"] + \"/result.json\", \"w\"))'" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  ids="$ids $id"
done
nvq job wait $ids --json --timeout 10m > waited.json
python3 -c 'import json; w = json.load(open("waited.json")); assert w["exit_code"] == 0 and not w["still_going"]'
for id in $ids; do nvq job result $id --json > result-$id.json; done
python3 -c '
import glob, json
results = [json.load(open(name)) for name in glob.glob("result-*.json")]
print("best lr", min(results, key=lambda r: r["result"]["loss"])["result"]["lr"])'
"""


def test_a_pipeline_step_and_a_sweep_driver_use_their_queue(
    remote: tuple[Nvq, SshdNode],
) -> None:
    nvq, _node = remote
    # NVQ_HOME inside the job points at another queue: the job's socket still wins.
    nvq.env["NVQ_HOME"] = str(nvq.home.parent / "elsewhere")
    first = nvq.submit(
        "--gpus", "0", "--",
        """echo '{"loss": 0.25}' > $NVQ_JOB_DIR/result.json""",
    )
    step = nvq.submit(
        "--gpus", "0", "--after", str(first["id"]), "--",
        f"NVQ_HOME=/nowhere nvq job result {first['id']} --json; "
        "command -v nvq; test -S $NVQ_SOCKET && echo socket-ok",
    )
    code, _ = nvq.wait(step["id"])
    assert code == 0, logs(nvq, step["id"])
    out = logs(nvq, step["id"])
    assert json.JSONDecoder().raw_decode(out)[0] == {"id": first["id"], "result": {"loss": 0.25}}
    assert "/.nvq-bin/nvq" in out and "socket-ok" in out

    driver = nvq.submit("--gpus", "0", "--", SWEEP_DRIVER)
    code, (done,) = nvq.wait(driver["id"], timeout=120)
    assert code == 0, logs(nvq, driver["id"])
    assert "best lr 0.01" in logs(nvq, driver["id"])
    trials = [j for j in nvq.json("job", "ls")["jobs"] if j["name"].startswith("trial-")]
    assert len(trials) == 3 and all(t["state"] == "completed" for t in trials)
    # the trials are the driver's owner's, and they say who made them
    assert {t["user"] for t in trials} == {done["user"]}
    assert {t["submitter"] for t in trials} == {f"job {driver['id']}"}


def test_a_finished_attempt_has_no_socket_and_refuses(
    remote: tuple[Nvq, SshdNode], tmp_path: Path,
) -> None:
    nvq, node = remote
    keep = tmp_path / "kept"
    job = nvq.submit(
        "--gpus", "0", "--", f"echo $NVQ_SOCKET > {keep}; nvq job show $NVQ_JOB_ID --json",
    )
    code, _ = nvq.wait(job["id"])
    assert code == 0, logs(nvq, job["id"])
    shown = json.JSONDecoder().raw_decode(logs(nvq, job["id"]))[0]
    assert shown["id"] == job["id"] and shown["state"] == "running"
    sock = Path(keep.read_text().strip())
    assert sock.parent.parent == node.home / "jobs"
    assert not sock.exists()  # gone with its attempt
    # a process that kept the job's nvq cannot reach the queue through it any more
    shim = sock.parent / ".nvq-bin" / "nvq"
    # the runner's own user's job links the runner's one copy: no inode of its own
    assert (shim.parent / "job_cli.py").stat().st_nlink >= 2
    r = subprocess.run(
        [str(shim), "job", "show", str(job["id"]), "--json"],
        env={**os.environ, "NVQ_SOCKET": str(sock)}, capture_output=True, text=True,
        timeout=30,
    )
    assert r.returncode == 1
    assert "cannot reach this job's queue" in json.loads(r.stdout)["error"]


def test_a_members_job_has_its_owners_rights_only() -> None:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
        theirs = nvq.submit("--gpus", "0", "--", "sleep", "60")
        script = (
            f"nvq job cancel {theirs['id']} --json; echo rc=$?; "
            "nvq job show $NVQ_JOB_ID --json > own.json && echo own-ok"
        )
        r = as_user(user, nvq, "job", "submit", "--gpus", "0", "--json", "--", script)
        assert r.code == 0, r.err
        mine = r.json()
        code, _ = nvq.wait(mine["id"])
        out = logs(nvq, mine["id"])
        assert code == 0, out
        refused = json.JSONDecoder().raw_decode(out)[0]
        assert refused["exit_code"] == 1, refused
        assert "only its owner or a queue admin" in refused["error"], refused
        assert "rc=1" in out and "own-ok" in out
        assert nvq.show(theirs["id"])["state"] == "running"
