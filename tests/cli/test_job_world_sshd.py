"""A job's world on a node reached over SSH: its snapshot crosses the node's own
connection, and the submitting shell's environment meets the node's login one."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from tests.cli.test_job_world import logs, make_project
from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.sshd import SshdNode


def test_relative_script_runs_on_an_sshd_node(remote: tuple[Nvq, SshdNode]) -> None:
    nvq, node = remote
    assert nvq.cwd is not None
    project = make_project(nvq.cwd)
    (project / "src").mkdir()
    (project / "src" / "helper.txt").write_text("helper\n")
    nvq.env["VIRTUAL_ENV"] = "/nonexistent/proj/.venv"
    nvq.env["RUN_LABEL"] = "sweep-1"
    job = nvq.submit("--gpus", "0", "--", sys.executable, "train.py")
    (project / "config.yaml").write_text("lr: 99\n")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0, done
    out = logs(nvq, job["id"])
    assert "config: lr: 0.1" in out
    work = Path(out.split("cwd: ", 1)[1].splitlines()[0])
    # the job's directory on the node, named by the queue's id, the job id and its nonce
    assert work.name == "work" and work.parent.parent == node.home / "jobs"
    assert f"-{job['id']}-" in work.parent.name
    assert (work / "src" / "helper.txt").read_text() == "helper\n"
    assert (work / "out.txt").read_text() == "written by the job\n"
    assert "venv: None" in out  # a path the node lacks is not carried
    shown = nvq.show(job["id"])
    assert "VIRTUAL_ENV=/nonexistent/proj/.venv (no such path there)" in shown["env_dropped"]
    text = nvq.ok("job", "show", str(job["id"])).out
    assert "not carried to n0: VIRTUAL_ENV=/nonexistent/proj/.venv (no such path there)" in text

    pulled = nvq.json("job", "pull", str(job["id"]), "--to", str(node.home.parent / "back"))
    assert pulled["node"] == "n0"
    back = node.home.parent / "back"
    assert (back / "work" / "out.txt").read_text() == "written by the job\n"
    assert (back / "work" / "config.yaml").read_text() == "lr: 0.1\n"
    assert (back / "artifacts").is_dir()

    # the second job of the same code fetches nothing new: the node's cache has it all
    cache = node.home / "cache" / "objects"
    before = sorted(p.name for p in cache.rglob("*") if p.is_file())
    again = nvq.submit("--gpus", "0", "--", 'echo "label=$RUN_LABEL"; cat config.yaml')
    assert nvq.wait(again["id"])[0] == 0
    assert "label=sweep-1" in logs(nvq, again["id"])
    assert "lr: 99" in logs(nvq, again["id"])  # a new snapshot, with the edit
    after = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert len(after) == len(before) + 2  # the edited config.yaml and the new manifest


def test_in_place_goes_only_to_nodes_sharing_the_directory(
    tmp_path: Path, sshd_nodes: Any,
) -> None:
    shared_node, other = sshd_nodes(2)
    nvq = make_nvq(tmp_path / "q")
    try:
        write_mesh_config(nvq, [shared_node, other])
        assert nvq.cwd is not None
        config = (nvq.home / "config.toml").read_text()
        config = config.replace('name = "n0"\n', f'name = "n0"\nshared = ["{tmp_path}"]\n')
        nvq.write_config(config)
        project = make_project(nvq.cwd)
        ids = [nvq.submit("--gpus", "0", "--in-place", "--", sys.executable, "train.py")["id"]
               for _ in range(3)]
        code, done = nvq.wait(*ids)
        assert code == 0, done
        assert {job["node"] for job in done} == {"n0"}
        assert (project / "out.txt").read_text() == "written by the job\n"
        assert f"cwd: {project}" in logs(nvq, ids[0])
    finally:
        nvq.shutdown()


def test_a_failure_names_the_path_that_did_not_travel(remote: tuple[Nvq, SshdNode]) -> None:
    nvq, _ = remote
    nvq.env["VIRTUAL_ENV"] = "/nonexistent/proj/.venv"
    job = nvq.submit("--gpus", "0", "--", "exit 1")
    code, (done,) = nvq.wait(job["id"])
    # the venv first (it decides which python ran); other paths this shell had may follow
    why = ("exited with code 1 (likely cause: not carried to n0: "
           "VIRTUAL_ENV=/nonexistent/proj/.venv (no such path there)")
    assert code == 1 and done["reason"].startswith(why)
    said = nvq.run("job", "wait", str(job["id"]))
    assert said.out.startswith(f"job {job['id']} failed: {why}")
    alerts = nvq.run("queue", "alerts", "--json").json()["alerts"]  # exit 1: there are alerts
    (alert,) = [a for a in alerts if a["job_id"] == job["id"]]
    assert why in alert["message"]


# Leaves a socket and a fifo in its working directory, says so, and keeps running.
SPECIAL_FILES = """\
mkfifo pipe
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("talk.sock")'
echo kept > kept.txt
echo ready > ready
sleep 600
"""


def test_a_running_jobs_pull_leaves_out_its_sockets_and_fifos(
    remote: tuple[Nvq, SshdNode],
) -> None:
    nvq, node = remote
    assert nvq.cwd is not None
    make_project(nvq.cwd)
    job = nvq.submit("--gpus", "0", "--", SPECIAL_FILES)
    # the job's own word that its files are there (its directory is made once the
    # node has it: "running" is said at dispatch)
    ready = f"*-{job['id']}-*/work/ready"
    deadline = time.monotonic() + 120
    while not list((node.home / "jobs").glob(ready)):
        assert time.monotonic() < deadline, "the job never wrote its files"
        time.sleep(0.05)
    back = node.home.parent / "back"
    pulled = nvq.run("job", "pull", str(job["id"]), "--to", str(back))
    assert pulled.code == 0, pulled.err
    assert (back / "work" / "kept.txt").read_text() == "kept\n"
    assert not (back / "work" / "pipe").exists()
    assert not (back / "work" / "talk.sock").exists()
    nvq.ok("job", "cancel", str(job["id"]))
