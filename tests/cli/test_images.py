"""Jobs that run in a container image, through the real CLI, on real sshd nodes with
real rootful Podman (a busybox image the test builds itself; no registry)."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_job_world import logs
from tests.cluster import Nvq, make_nvq, write_mesh_config
from tests.harness.podman import IMAGE, PYTHON_IMAGE, PodmanStore, podman_missing
from tests.harness.sshd import SshdNode
from tests.harness.tmux import Tmux
from tests.members import as_user, reachable_nvq, second_user

# Each test builds and stages real images on sshd nodes: 2-11 s alone here, more loaded.
pytestmark = pytest.mark.timeout(300)

RUN_SH = """\
echo "uid=$(id -u) cwd=$(pwd)"
cat data.txt
if [ -f /artifacts/ckpt ]; then echo "resumed from $(cat /artifacts/ckpt)"; fi
echo step-1 > "$NVQ_ARTIFACTS/ckpt"
echo "cards=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES"
echo '{"loss": 0.5}' > "$NVQ_JOB_DIR/result.json"
"""


@pytest.fixture
def images(tmp_path: Path, sshd_nodes: Any) -> Iterator[tuple[Nvq, PodmanStore, list[SshdNode]]]:
    """The queue host's store holds the image; the nodes' store (n0's and n1's runners:
    Podman) starts empty and no registry is reachable, so the image must come from the
    queue host. n2 is told to use apptainer, which it lacks: it has no runtime."""
    why = podman_missing()
    if why is not None:
        pytest.skip(why)
    host = PodmanStore(tmp_path / "podman-host")
    store = PodmanStore(tmp_path / "podman-nodes")
    try:
        host.build_busybox()
        nodes = sshd_nodes(3)
        nvq = make_nvq(tmp_path / "q")
        nvq.env.update(host.env)
        write_mesh_config(nvq, nodes)
        config = (nvq.home / "config.toml").read_text()
        runner_env = "".join(f'{k} = "{v}"\n' for k, v in store.env.items())
        config = config.replace('NVQ_GPU_BACKEND = "fake"\n',
                                'NVQ_GPU_BACKEND = "fake"\n' + runner_env)
        config = config.replace('name = "n2"\n', 'name = "n2"\nruntime = "apptainer"\n')
        nvq.write_config(config)
        try:
            yield nvq, store, nodes
        finally:
            nvq.shutdown()
    finally:
        store.close()
        host.close()


def test_an_image_job_runs_its_code_with_its_cards_artifacts_and_result(
    images: tuple[Nvq, PodmanStore, list[SshdNode]], tmp_path: Path,
) -> None:
    nvq, store, nodes = images
    assert nvq.cwd is not None
    (nvq.cwd / "run.sh").write_text(RUN_SH)
    (nvq.cwd / "data.txt").write_text("data from the submit directory\n")
    assert store.podman("image", "exists", IMAGE, check=False).returncode == 1
    job = nvq.submit("--image", IMAGE, "--gpus", "1", "--", "sh run.sh")
    code, (done,) = nvq.wait(job["id"])
    assert code == 0, (done.get("reason"), done.get("stderr_tail"), logs(nvq, job["id"]))
    assert done["node"] in ("n0", "n1")  # n2 has no runtime: never an image job there
    out = logs(nvq, job["id"])
    assert f"uid={os.getuid()} cwd=" in out
    assert "data from the submit directory" in out
    assert "resumed" not in out
    card = done["gpus"][0]
    assert f"cards=0 nvidia={card}" in out  # the container's view of its one card
    assert nvq.json("job", "result", str(job["id"]))["result"] == {"loss": 0.5}
    assert done["image"] == IMAGE
    assert done["image_id"] == images_id(nvq, IMAGE)
    shown = nvq.ok("job", "show", str(job["id"])).out
    assert f"image       {IMAGE}  (sha256:{done['image_id'][:12]})" in shown
    node = nodes[int(done["node"][1:])]
    (ckpt,) = node.home.glob(f"jobs/*-{job['id']}-*/artifacts/ckpt")
    assert ckpt.read_text() == "step-1\n"
    assert store.containers() == []  # --rm: nothing left behind
    # a next step in an image reads this one's artifacts at $NVQ_INPUTS/<id>/
    step = nvq.submit("--image", IMAGE, "--gpus", "0", "--after", str(job["id"]), "--",
                      f'cat "$NVQ_INPUTS/{job["id"]}/ckpt"')["id"]
    assert nvq.wait(step)[0] == 0, logs(nvq, step)
    assert logs(nvq, step) == "step-1\n"
    # the node got the image from the queue host, and keeps it for the next job
    assert store.podman("image", "exists", IMAGE, check=False).returncode == 0

    # image push: staged ahead of any job. n2 has no runtime to load it into.
    store.podman("rmi", "-f", IMAGE)
    pushed = nvq.run("image", "push", IMAGE, "--nodes", "n0,n2", "--json")
    assert pushed.code == 1, pushed.err
    by_node = {n["node"]: n for n in pushed.json()["nodes"]}
    assert by_node["n0"]["loaded"] and by_node["n0"]["error"] is None, by_node
    assert by_node["n2"]["error"] == "no container runtime that can load an image (podman or docker)"
    assert pushed.json()["image_id"] == done["image_id"]
    assert store.podman("image", "exists", IMAGE, check=False).returncode == 0
    listed = {n["node"]: n for n in nvq.json("image", "ls", "--json")["nodes"]}
    assert [(i["ref"], i["id"]) for i in listed["n0"]["images"]] == [(IMAGE, done["image_id"])]
    assert (listed["n2"]["runtime"], listed["n2"]["images"]) == ("", None)
    again = nvq.run("image", "push", IMAGE, "--nodes", "n0")
    assert again.code == 0 and "n0: already there" in again.out, again.out + again.err
    # A new version under the same name: the node's image of that name is the old one,
    # so it loads the new one (bench/image_staging.py shows it fetches only what changed).
    host = PodmanStore(tmp_path / "podman-host")  # the fixture's queue host store
    (host.dir / "rootfs" / "notes.txt").write_text("version 2\n")
    new_id = host.build_busybox().removeprefix("sha256:")
    newer = nvq.run("image", "push", IMAGE, "--nodes", "n0", "--json")
    (n0,) = newer.json()["nodes"]
    assert n0["loaded"] and n0["fetched_bytes"] > 0 and n0["error"] is None, newer.out
    listed = {n["node"]: n for n in nvq.json("image", "ls", "--json")["nodes"]}
    assert (IMAGE, new_id) in [(i["ref"], i["id"]) for i in listed["n0"]["images"]]
    absent = nvq.run("image", "push", "localhost/nvq-absent:1")
    assert absent.code == 2
    assert absent.err.strip() == ("nvq: this host's podman has no image localhost/nvq-absent:1 "
                                  "(`podman pull localhost/nvq-absent:1` here first)")

    # An image the queue host lacks: the node tries to pull it, and the job fails
    # before it starts, saying why in one line (no registry is reachable here).
    unpullable = nvq.submit("--image", "localhost/nvq-absent:1", "--gpus", "0", "--", "true")
    _, (ended,) = nvq.wait(unpullable["id"])
    assert ended["state"] == "failed", ended
    assert ended["reason"].startswith(
        "launch failed: cannot bring the image localhost/nvq-absent:1 to this node: the queue "
        "host had no copy to send and podman pull failed here: "), ended["reason"]

    # In an image with python3, the in-job nvq reaches the queue from the container
    # (through $NVQ_SOCKET, as the job's user). Built in the nodes' store: no transfer.
    store.build_python()
    inner = nvq.submit("--image", PYTHON_IMAGE, "--gpus", "0", "--",
                       "nvq job show $NVQ_JOB_ID > /artifacts/me.json")
    code, (done,) = nvq.wait(inner["id"])
    assert code == 0, (done.get("reason"), logs(nvq, inner["id"]))
    node = nodes[int(done["node"][1:])]
    (me,) = node.home.glob(f"jobs/*-{inner['id']}-*/artifacts/me.json")
    shown = json.loads(me.read_text())
    assert (shown["id"], shown["state"], shown["image"]) == (inner["id"], "running", PYTHON_IMAGE)

    # The container's exit code is the job's.
    failed = nvq.submit("--image", IMAGE, "--gpus", "0", "--", "exit 7")
    code, (ended,) = nvq.wait(failed["id"])
    assert ended["exit_code"] == 7, ended

    runtimes = {n["name"]: n["runtime"] for n in nvq.json("queue", "nodes", "--json")["nodes"]}
    assert runtimes == {"n0": "podman", "n1": "podman", "n2": ""}

    # Pinned to the node without a runtime, it could never run: refused, saying why.
    refused = nvq.run("job", "submit", "--image", IMAGE, "--gpus", "0", "--node", "n2",
                      "--", "true")
    assert refused.code == 2
    assert "no node matching --node 'n2' has a container runtime" in refused.err


def test_an_image_job_is_adopted_by_a_restarted_runner_and_cancelled_with_its_processes(
    images: tuple[Nvq, PodmanStore, list[SshdNode]],
) -> None:
    nvq, store, nodes = images
    # The in-job nvq: $NVQ_SOCKET is there in the container, and `nvq` on its PATH says
    # plainly that this image has no python3 to run it.
    script = ('[ -S "$NVQ_SOCKET" ] && echo "socket at $NVQ_SOCKET"; nvq queue status; '
              'echo waiting; while [ ! -f /artifacts/go ]; do sleep 0.1; done; echo went; exit 3')
    job = nvq.submit("--image", IMAGE, "--gpus", "0", "--", script)
    running = nvq.wait_for(
        job["id"], lambda j: j["started_at"] is not None and "waiting" in logs(nvq, j["id"]))
    (name,) = store.containers()
    assert name.startswith("nvq-") and name.endswith(f"-{job['id']}-1")
    out = logs(nvq, job["id"])
    assert "socket at /" in out and "/nvq.sock" in out, out
    problem = nvq.run("job", "logs", str(job["id"]), "--stderr").out
    assert "nvq: no python3 here to run nvq (it needs python3's standard library only); " \
        "the queue is at /" in problem, problem

    # job exec runs inside the container: the image's files, the job's user and world.
    inside = nvq.run("job", "exec", str(job["id"]), "--",
                     'echo "in $NVQ_IMAGE as $(id -u) at $(pwd)"; ls /bin/busybox; '
                     'echo apart >&2; exit 4')
    assert inside.code == 4, inside.err
    assert f"in {IMAGE} as {os.getuid()} at " in inside.out and "/bin/busybox" in inside.out
    # no terminal (stdin is not one): nothing but what the command wrote, stderr apart
    assert inside.out.startswith("in ") and "\x00" not in inside.out, repr(inside.out)
    assert inside.err == "apart\n", inside.err
    nvq.ok("node", "restart", running["node"])
    (artifacts,) = nodes[int(running["node"][1:])].home.glob(f"jobs/*-{job['id']}-*/artifacts")
    (artifacts / "go").write_text("")
    _, (done,) = nvq.wait(job["id"])
    assert done["exit_code"] == 3, done  # learnt by the new runner
    assert "went" in logs(nvq, job["id"])

    # Moved to the other node, it finds its /artifacts/ckpt there again.
    body = ('if [ -f /artifacts/ckpt ]; then echo "resumed from $(cat /artifacts/ckpt)"; exit 0; '
            'fi; echo step-1 > /artifacts/ckpt; echo saved; sleep 6013')
    job = nvq.submit("--image", IMAGE, "--gpus", "0", "--", body)
    running = nvq.wait_for(
        job["id"], lambda j: j["started_at"] is not None and "saved" in logs(nvq, j["id"]))
    other = "n1" if running["node"] == "n0" else "n0"
    nvq.ok("job", "move", str(job["id"]), other)
    code, (done,) = nvq.wait(job["id"])
    assert code == 0 and (done["node"], done["attempt"]) == (other, 2), done
    assert "resumed from step-1" in logs(nvq, job["id"])

    # Cancelled: the container and every process in it are gone.
    # lengths of its own (a second suite on this machine runs the same test): the
    # check below reads every process on the machine
    a, b = (secrets.randbelow(10**6) + 10**6 for _ in range(2))
    job = nvq.submit("--image", IMAGE, "--gpus", "0", "--", f"echo up; sleep {a} & sleep {b}")
    nvq.wait_for(job["id"], lambda j: j["started_at"] is not None and "up" in logs(nvq, j["id"]))
    nvq.ok("job", "cancel", str(job["id"]))
    nvq.wait_for(job["id"], lambda j: j["state"] == "cancelled")
    # --rm: the runtime removes the stopped container just after its client returns
    nvq.wait_for(job["id"], lambda j: store.containers() == [])
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline")
                if _cmdline(p) in (f"sleep\x00{a}\x00", f"sleep\x00{b}\x00")]

    # job shell --image: a terminal on the image's own shell, as the submitting user.
    tmux = Tmux(nvq.home.parent / "tmux.sock", nvq.env, session="sh")
    try:
        tmux.start(f"cd {nvq.cwd} && {sys.executable} -m nvq job shell --image {IMAGE} "
                   "--gpus 0; echo nvq-exited=$?; sleep 600")
        tmux.until("placed on n")
        tmux.keys("echo \"in-$NVQ_IMAGE\" as $(id -u) tty=$([ -t 0 ] && echo y''es)", "Enter")
        tmux.until(f"in-{IMAGE} as {os.getuid()} tty=yes")
        tmux.keys("exit 3", "Enter")
        tmux.until("nvq-exited=3")
    finally:
        tmux.close()
    nvq.wait_for(job["id"], lambda j: store.containers() == [])


def images_id(nvq: Nvq, ref: str) -> str:
    """The image's id in the queue host's store."""
    out = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", ref],
                         env=nvq.env, capture_output=True, text=True, check=True)
    return out.stdout.strip().removeprefix("sha256:")


def _cmdline(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_project_test_runs_the_job_here_in_its_image(tmp_path: Path) -> None:
    why = podman_missing()
    if why is not None:
        pytest.skip(why)
    store = PodmanStore(tmp_path / "podman")
    try:
        store.build_busybox()
        nvq = make_nvq(tmp_path / "q")
        nvq.env.update(store.env)
        assert nvq.cwd is not None
        (nvq.cwd / "data.txt").write_text("here\n")
        (nvq.cwd / "manifest.toml").write_text(
            '[job]\ncommand = "cat data.txt; id -u; echo $NVQ_ARTIFACTS; '
            'test -d /artifacts && ls /bin/busybox; exit 5"\nmemory = "256MiB"\n')
        run = nvq.run("project", "test", "--image", IMAGE, "--json")
        doc = run.json()
        assert run.code == 5 and doc["exit_code"] == 5, doc
        assert doc["stdout_tail"].split() == ["here", str(os.getuid()), "/artifacts",
                                              "/bin/busybox"], doc
        assert doc["memory_limit_mb"] == 256
        assert store.containers() == []
    finally:
        store.close()


def test_a_members_image_job_runs_as_them(tmp_path: Path) -> None:
    why = podman_missing()
    if why is not None:
        pytest.skip(why)
    store = PodmanStore(tmp_path / "podman")
    try:
        store.build_busybox()
        with second_user() as (user, group), reachable_nvq() as nvq:
            nvq.env.update(store.env)
            nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
            nvq.ok("queue", "status")  # the owner starts the daemon
            r = as_user(user, nvq, "job", "submit", "--image", IMAGE, "--gpus", "0", "--json",
                        "--no-snapshot", "--", "id -u; id -g; echo x > /artifacts/ckpt")
            assert r.code == 0, r.err
            job = r.json()
            done = as_user(user, nvq, "job", "wait", str(job["id"]), "--json")
            assert done.code == 0, done.out + done.err
            who = pwd.getpwnam(user)
            out = as_user(user, nvq, "job", "logs", str(job["id"])).out.split()
            assert out == [str(who.pw_uid), str(who.pw_gid)]
            (ckpt,) = nvq.node_home.glob(f"jobs/*{job['id']}*/artifacts/ckpt")
            assert ckpt.stat().st_uid == who.pw_uid
    finally:
        store.close()
