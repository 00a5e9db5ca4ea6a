"""A job talks to the queue that runs it: `nvq` inside a job reaches its own queue
through `$NVQ_SOCKET`, which the runner relays to the daemon, on a node reached over
SSH with nothing installed there by hand."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import jsonschema

from nvq.cli.json_shapes import schema
from tests.cli.test_job_world import logs
from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode
from tests.members import as_user, reachable_nvq, second_user

SKILL = Path(__file__).resolve().parents[2] / "nvq" / "agents" / "SKILL.md"



def test_a_pipeline_step_uses_its_queue(
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



TRAIN = """\
import json, os, sys
lr = float(sys.argv[sys.argv.index("--lr") + 1])
with open(os.path.join(os.environ["NVQ_JOB_DIR"], "result.json"), "w") as f:
    json.dump({"lr": lr, "loss": abs(lr - 0.01)}, f)
"""


def skill_sweep_driver() -> str:
    """The driver script exactly as the skill shows it."""
    text = SKILL.read_text()
    start = text.index("cat > sweep.sh <<'EOF'\n") + len("cat > sweep.sh <<'EOF'\n")
    return text[start : text.index("\nEOF\n", start) + 1]


def test_the_skills_sweep_driver_runs_as_written(remote: tuple[Nvq, SshdNode]) -> None:
    """A driver job, written as the skill says, submits three trials with notes, waits
    for them and writes the best into its own result.json: the trials run in the
    driver's directory as it is (unchanged here: the same snapshot), on the node the
    queue picks."""
    nvq, _node = remote
    assert nvq.cwd is not None
    (nvq.cwd / "train.py").write_text(TRAIN)
    (nvq.cwd / "sweep.sh").write_text(skill_sweep_driver())
    driver = nvq.submit("--gpus", "0", "--note", "lr sweep driver", "--", "bash", "sweep.sh")
    code, (done,) = nvq.wait(driver["id"], timeout=180)
    assert code == 0, logs(nvq, driver["id"])
    assert nvq.json("job", "result", str(driver["id"]))["result"]["lr"] == 0.01
    trials = [j for j in nvq.json("job", "ls")["jobs"] if j["id"] != driver["id"]]
    assert sorted(t["note"] for t in trials) == ["lr 0.001 trial", "lr 0.01 trial", "lr 0.1 trial"]
    assert all(t["state"] == "completed" for t in trials)
    # the trials are the driver's owner's, they say who made them, and took a snapshot of
    # its working copy, which holds what it started with
    assert {t["user"] for t in trials} == {done["user"]}
    assert {t["submitter"] for t in trials} == {f"job {driver['id']}"}
    assert {nvq.show(t["id"])["manifest_id"] for t in trials} == {nvq.show(driver["id"])["manifest_id"]}


DRIVER = """\
set -e
mkdir gen && printf 'lr=0.02\\n' > gen/config.txt
printf 'shard-7\\n' > shard.txt
printf 'big.bin\\n' > .nvqignore && printf 'never sent\\n' > big.bin
id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
top=$(nvq job submit --json --gpus 0 --node n1 -- sh -c 'cat gen/config.txt shard.txt; test -e big.bin && echo big || echo no-big' | id)
mkdir huge && head -c 2000000 /dev/zero > huge/blob.bin && cd huge
nvq job submit --json --gpus 0 -- true > ../huge.json || echo "huge rc=$?"
cd ../gen && cat ../huge.json
sub=$(nvq job submit --json --gpus 0 --node n1 -- cat config.txt | id)
nvq job wait $top $sub --json > /dev/null
echo "children $top $sub"
"""


def test_a_job_from_a_job_takes_what_its_caller_wrote(tmp_path: Path, sshd_nodes: Any) -> None:
    """A driver writes files after it started and submits from its working copy, and
    from a directory it made: each child runs on the other node, in a fresh snapshot
    holding those files, with the driver's ignore file and the queue's max_snapshot
    heeded."""
    a, b = sshd_nodes(2)
    nvq = make_nvq(tmp_path / "q")
    write_mesh_config(nvq, [a, b], queue_extra='\n[submit]\nmax_snapshot = "1MiB"')
    try:
        driver = nvq.submit("--gpus", "0", "--node", "n0", "--", DRIVER)
        code, _ = nvq.wait(driver["id"], timeout=180)
        out = logs(nvq, driver["id"])
        assert code == 0, out
        assert "huge rc=1" in out and "blob.bin (1.9 MiB)" in out, out
        assert "/work/huge is 1.9 MiB" in out and "/pulls/" not in out, out  # the node's path
        top, sub = (int(i) for i in out.split("children ", 1)[1].split()[:2])
        for child in (top, sub):
            shown = nvq.show(child)
            assert (shown["state"], shown["node"]) == ("completed", "n1"), shown
            assert shown["manifest_id"] and shown["manifest_id"] != nvq.show(driver["id"])["manifest_id"]
        assert logs(nvq, top) == "lr=0.02\nshard-7\nno-big\n", logs(nvq, top)
        assert logs(nvq, sub) == "lr=0.02\n"
    finally:
        nvq.shutdown()


def test_the_in_job_nvq_takes_the_clis_words(
    remote: tuple[Nvq, SshdNode], tmp_path: Path
) -> None:
    """Options the small shim refused, argv with spaces and quotes passed as typed, the
    commands it lacked, `--in-place` in the caller's own directory, and a wait that
    answers at the first bad end."""
    nvq, _node = remote
    script = r"""
set -e
nvq job submit --json --gpus 0 --note "a note" --timeout 1h --retries 1 -- printf '%s|' 'two words' "it's" > argv.json
mkdir sub && cp argv.json sub/ && cd sub && echo here > mark.txt
nvq job submit --json --gpus 0 --in-place -- cat mark.txt > inplace.json
nvq job submit --json --gpus 0 --frobnicate -- true > bad.json || echo "bad rc=$?"
for f in argv inplace; do nvq job wait $(python3 -c "import json; print(json.load(open('$f.json'))['id'])") --json > /dev/null; done
nvq job logs $(python3 -c "import json; print(json.load(open('argv.json'))['id'])")
echo
nvq job logs $(python3 -c "import json; print(json.load(open('inplace.json'))['id'])")
nvq job why $NVQ_JOB_ID --json > why.json && echo why-ok
nvq queue status --json > status.json && echo status-ok
nvq job show $NVQ_JOB_ID --reveal || echo "reveal rc=$?"
cat bad.json argv.json
id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
failing=$(nvq job submit --json --gpus 0 -- false | id)
slow=$(nvq job submit --json --gpus 0 -- sleep 600 | id)
nvq job wait $failing $slow --json > waited.json || echo "wait rc=$?"
python3 -c "import json; assert json.load(open('waited.json'))['still_going'] == [$slow]" && echo going-ok
nvq job cancel $slow --json > cancelled.json
python3 -c "import json; assert json.load(open('cancelled.json'))['jobs'][0]['state'] == 'cancelled'" && echo cancel-ok
nvq job result $failing $slow --json > results.json
nvq job logs $failing --json > logs.json
nvq job ls --json --limit 2 > ls.json
cp argv.json bad.json waited.json cancelled.json why.json status.json results.json logs.json ls.json "$DOCS"
"""
    docs = tmp_path / "docs"
    docs.mkdir()
    job = nvq.submit("--gpus", "0", "--env", f"DOCS={docs}", "--", script)
    code, _ = nvq.wait(job["id"], timeout=120)
    out = logs(nvq, job["id"])
    assert code == 0, out
    # every document it printed is what `nvq schema` says its command prints
    for name, command in [("argv", "job submit"), ("bad", "job submit"), ("waited", "job wait"),
                          ("cancelled", "job cancel"), ("why", "job why"),
                          ("status", "queue status"), ("results", "job result"),
                          ("logs", "job logs"), ("ls", "job ls")]:
        doc = json.loads((docs / f"{name}.json").read_text())
        jsonschema.validate(doc, schema(command), cls=jsonschema.Draft202012Validator)
    assert "two words|it's|" in out and "\nhere\n" in out
    assert "bad rc=2" in out and "No such option" in out and "--frobnicate" in out
    assert "why-ok" in out and "status-ok" in out and "reveal rc=2" in out
    # `job wait` answers at the first bad end inside a job too, with what still goes
    assert "wait rc=1" in out and "going-ok" in out and "cancel-ok" in out
    (argv_job,) = [j for j in nvq.json("job", "ls")["jobs"] if j["note"] == "a note"]
    shown = nvq.show(argv_job["id"])
    assert (shown["timeout"], shown["retries"]) == (3600.0, 1)
    assert shown["command"] == shlex.join(["printf", "%s|", "two words", "it's"])  # as outside


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
            "nvq job show $NVQ_JOB_ID --json > own.json && echo own-ok; "
            # a child of the member's job: a snapshot the daemon took for them, theirs to run
            "printf made > made.txt; nvq job submit --json --gpus 0 --wait -- cat made.txt "
            "> child.json; echo child-rc=$?"
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
        assert "rc=1" in out and "own-ok" in out and "child-rc=0" in out, out
        (child,) = [j for j in nvq.json("job", "ls")["jobs"] if j["submitter"] == f"job {mine['id']}"]
        assert logs(nvq, child["id"]) == "made"
        assert nvq.show(theirs["id"])["state"] == "running"
