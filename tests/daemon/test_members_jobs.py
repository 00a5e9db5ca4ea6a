"""A member's job is the owner's job: the same scenarios, through the real CLI, for the
queue's owner (root) and for a real `useradd` member of `members_group`, on an sshd
node. One queue serves every cell (module-scoped): two sshd nodes of two cards each,
and each cell waits for its own jobs to end before the next one starts. A job that
runs again on another node finds its checkpoint through the on-demand (FUSE) mount.

`job logs --attempt` while a preempted job waits is not a cell yet (it fails for
everyone until its own fix lands), and the exec cell checks only who and where."""

from __future__ import annotations

import json
import os
import pty
import pwd
import select
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nvq.cli.submit_world import MEMBER_IMAGE
from nvq_runner.fusemount import clean_stale, fuse_mounts, unavailable
from tests.cli.test_job_reach import first_json
from tests.cluster import Nvq, Run, kill_processes_under, make_nvq, write_mesh_config
from tests.harness.cli_calls import Started, User, run_nvq, start_nvq
from tests.harness.podman import IMAGE, PodmanStore, podman_missing
from tests.harness.sshd import SshdNode, make_client_key, sshd_available, start_sshd_nodes
from tests.members import _user, _workdir, as_user, nvq_command, second_user

ROLES = ["owner", "member"]
# The queue's [submit]: the owner's config, which a member cannot read; the daemon
# gives it to their submit.
SUBMIT = '\n[submit]\nmax_snapshot = "1MiB"\nenv_exclude = ["LAB_SECRET*"]\n'

# Checkpoints on its --signal and says which signal came; a later attempt resumes from
# the checkpoint. `ready` tells the test the handler is in place.
TRAIN = """\
import os, signal, sys, time
ck = os.path.join(os.environ["NVQ_ARTIFACTS"], "step")
if os.path.exists(ck):
    print("resumed at", open(ck).read().strip(), "as", os.getuid(), flush=True)
    sys.exit(0)
def on_signal(sig, frame):
    with open(ck, "w") as f:
        f.write("5\\n")
    print("checkpointed on", signal.Signals(sig).name, flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, on_signal)
open(os.path.join(os.environ["NVQ_JOB_DIR"], "ready"), "w").close()
while True:
    time.sleep(0.2)
"""


@dataclass
class Lab:
    nvq: Nvq
    user: str  # the member
    nodes: list[SshdNode]

    def cwd(self, role: str) -> Path:
        return Path(_workdir(self.user)) if role == "member" else self.nvq.cwd or Path("/")

    def uid(self, role: str) -> int:
        return pwd.getpwnam(self.user).pw_uid if role == "member" else os.getuid()

    def run(self, role: str, *args: str) -> Run:
        return as_user(self.user, self.nvq, *args) if role == "member" else self.nvq.run(*args)

    def submit(self, role: str, *args: str) -> dict[str, Any]:
        r = self.run(role, "job", "submit", "--json", *args)
        assert r.code == 0, r.err
        return r.json()  # type: ignore[no-any-return]

    def put(self, role: str, name: str, text: str) -> None:
        """A file in the directory the role types `nvq` in, theirs."""
        path = self.cwd(role) / name
        path.write_text(text)
        who = pwd.getpwnam(self.user) if role == "member" else pwd.getpwuid(os.getuid())
        os.chown(path, who.pw_uid, who.pw_gid)

    def ready(self, job_id: int) -> Callable[[dict[str, Any]], bool]:
        """The job runs and its program has put its signal handler in place."""
        def pred(job: dict[str, Any]) -> bool:
            return job["state"] == "running" and any(
                any(Path(n.home).glob(f"jobs/*-{job_id}-*/ready")) for n in self.nodes)
        return pred

    def logs(self, role: str, job_id: int) -> str:
        r = self.run(role, "job", "logs", str(job_id))
        assert r.code == 0, r.err
        return r.out


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    if not sshd_available():
        pytest.skip("OpenSSH sshd is not installed (`make parts` installs openssh-server)")
    with second_user() as (user, group):
        top = Path(tempfile.mkdtemp(prefix="nvq-members-jobs-", dir="/tmp"))
        top.chmod(0o755)
        nodes: list[SshdNode] = []
        # The nodes' container store holds the image: no staging from the queue host
        # (a member may not stage into the owner's store; their job's node pulls or has it).
        store = PodmanStore(top / "podman") if podman_missing() is None else None
        try:
            nvq = make_nvq(top)
            nodes = start_sshd_nodes(top / "sshd", 2, client_key=make_client_key(top / "client"))
            write_mesh_config(nvq, nodes, queue_extra=f'members_group = "{group}"')
            config = nvq.home / "config.toml"
            text = config.read_text() + SUBMIT
            if store is not None:
                store.build_busybox()
                runner_env = "".join(f'{k} = "{v}"\n' for k, v in store.env.items())
                text = text.replace('NVQ_GPU_BACKEND = "fake"\n',
                                    'NVQ_GPU_BACKEND = "fake"\n' + runner_env)
            config.write_text(text)
            nvq.nodes_up(2)
            yield Lab(nvq, user, nodes)
        finally:
            for node in nodes:
                node.close()
            try:
                nvq.shutdown()
            finally:
                if store is not None:
                    store.close()
                clean_stale(top)
                kill_processes_under(top)
                shutil.rmtree(top, ignore_errors=True)


needs_fuse = pytest.mark.skipif(unavailable() is not None, reason=f"FUSE: {unavailable()}")


@pytest.mark.parametrize("role", ROLES)
def test_the_signal_before_the_timeout_reaches_the_program(lab: Lab, role: str) -> None:
    # No bash between the wrapper and python: a bash there dies of the USR1 the
    # program handles, and the job ends "killed by signal 10".
    lab.put(role, "train.py", TRAIN)
    job = lab.submit(role, "--gpus", "1", "--timeout", "40s", "--signal", "USR1@37s",
                     "--", "python3", "train.py")
    code, (done,) = lab.nvq.wait(job["id"], timeout=120)
    assert (code, done["state"]) == (0, "completed"), done
    assert lab.logs(role, job["id"]) == "checkpointed on SIGUSR1\n"


@needs_fuse
@pytest.mark.parametrize("role", ROLES)
def test_a_moved_job_resumes_from_its_checkpoint_with_lazy_artifacts(lab: Lab, role: str) -> None:
    lab.put(role, "train.py", TRAIN)
    job = lab.submit(role, "--gpus", "1", "--signal", "USR1", "--", "python3", "train.py")
    running = lab.nvq.wait_for(job["id"], lab.ready(job["id"]), timeout=90)
    other = "n1" if running["node"] == "n0" else "n0"
    r = lab.run(role, "job", "move", str(job["id"]), other)
    assert r.code == 0, r.err
    code, (done,) = lab.nvq.wait(job["id"], timeout=120)
    assert (code, done["state"], done["attempt"], done["node"]) == (0, "completed", 2, other)
    assert lab.logs(role, job["id"]) == f"resumed at 5 as {lab.uid(role)}\n"
    _second_attempt_mounted(lab, job["id"])


@needs_fuse
@pytest.mark.parametrize("role", ROLES)
def test_a_preempted_job_resumes_from_its_checkpoint_with_lazy_artifacts(
    lab: Lab, role: str
) -> None:
    # n1 is taken, the job runs on n0, an urgent job takes n0 from it; once n1 frees,
    # the job runs there from its checkpoint.
    # --vram: a job without it would share the cards (issue 37, item 9)
    blocker = lab.submit("owner", "--gpus", "2", "--vram", "20GiB", "--node", "n1",
                         "--no-snapshot", "--", "sleep", "600")
    lab.nvq.wait_for(blocker["id"], lambda j: j["state"] == "running")
    lab.put(role, "train.py", TRAIN)
    job = lab.submit(role, "--gpus", "2", "--vram", "20GiB", "--preemptible", "--signal", "USR1",
                     "--", "python3", "train.py")
    lab.nvq.wait_for(job["id"], lab.ready(job["id"]), timeout=90)
    urgent = lab.submit(role, "--gpus", "2", "--vram", "20GiB", "--priority", "10",
                        "--no-snapshot", "--",
                        "sleep", "600")
    lab.nvq.wait_for(urgent["id"], lambda j: j["state"] == "running", timeout=90)
    lab.nvq.wait_for(job["id"], lambda j: j["state"] == "pending")
    # While it waits to run again, its first attempt's output is the user's to read.
    r = lab.run(role, "job", "logs", str(job["id"]), "--attempt", "1")
    assert r.code == 0 and "checkpointed on SIGUSR1\n" in r.out, (r.out, r.err)
    lab.nvq.ok("job", "cancel", str(blocker["id"]))
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    lab.nvq.ok("job", "cancel", str(urgent["id"]))
    assert (code, done["state"], done["node"]) == (0, "completed", "n1"), done
    shown = lab.nvq.show(job["id"])
    assert [a["outcome"] for a in shown["attempts"]] == ["preempted", "completed"]
    assert lab.logs(role, job["id"]) == f"resumed at 5 as {lab.uid(role)}\n"
    _second_attempt_mounted(lab, job["id"])


def _second_attempt_mounted(lab: Lab, job_id: int) -> None:
    """Attempt 2 found its checkpoint through the on-demand mount, and it is gone."""
    lab.nvq.wait_for(job_id, lambda j: any(
        s["attempt"] == 2 for s in j.get("artifact_syncs") or []), timeout=60)
    syncs = [s for s in lab.nvq.show(job_id)["artifact_syncs"] if s["attempt"] == 2]
    assert syncs[-1]["mode"] == "mounted", syncs
    for node in lab.nodes:
        assert fuse_mounts(Path(node.home)) == []


# Where it runs, as whom, whose copy that is, and whether .nvqignore held.
HELLO = """\
import os
print("in", os.path.basename(os.getcwd()), os.getuid(), end=", ")
print(f"a copy of {os.stat('hello.py').st_uid}'s, ignored: {os.path.exists('ignored.txt')}")
"""


@pytest.mark.parametrize("role", ROLES)
def test_a_relative_script_runs_from_the_snapshot(lab: Lab, role: str) -> None:
    lab.put(role, "hello.py", HELLO)
    lab.put(role, ".nvqignore", "ignored.txt\n")
    lab.put(role, "ignored.txt", "not taken\n")
    job = lab.submit(role, "--gpus", "0", "--", "python3", "hello.py")
    assert job["manifest_id"], job  # a snapshot, never silently none
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    assert (code, done["state"]) == (0, "completed"), done
    uid = lab.uid(role)
    assert lab.logs(role, job["id"]) == f"in work {uid}, a copy of {uid}'s, ignored: False\n"


@pytest.mark.parametrize("role", ROLES)
def test_the_setup_is_built_as_the_jobs_user(lab: Lab, role: str) -> None:
    # A member's setup ran as root on the node: their command, the runner's rights.
    job = lab.submit(role, "--gpus", "0", "--no-snapshot", "--setup",
                     f"id -u > $NVQ_ENV_DIR/built-by; echo {role}",
                     "--", "cat $NVQ_ENV_DIR/built-by")
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    assert (code, done["state"]) == (0, "completed"), done
    assert lab.logs(role, job["id"]) == f"{lab.uid(role)}\n"


# A requeued job: the first attempt leaves a mark in $NVQ_ARTIFACTS and fails; the
# next one finds it.
AGAIN = """\
import os
marks = os.path.join(os.environ["NVQ_ARTIFACTS"], "attempts")
seen = open(marks).read().split() if os.path.exists(marks) else []
with open(marks, "a") as f:
    f.write(os.environ["NVQ_ATTEMPT"] + "\\n")
if seen:
    print("attempts", " ".join(seen + [os.environ["NVQ_ATTEMPT"]]), flush=True)
    raise SystemExit(0)
raise SystemExit(3)
"""


@pytest.mark.parametrize("role", ROLES)
def test_a_requeued_job_runs_again_with_its_artifacts(lab: Lab, role: str) -> None:
    lab.put(role, "again.py", AGAIN)
    job = lab.submit(role, "--gpus", "1", "--", "python3", "again.py")
    code, (failed,) = lab.nvq.wait(job["id"], timeout=90)
    assert failed["state"] == "failed", failed
    lab.nvq.wait_for(job["id"], lambda j: any(  # its artifacts are on the queue host
        s["attempt"] == 1 for s in j.get("artifact_syncs") or []), timeout=60)
    r = lab.run(role, "job", "requeue", str(job["id"]))
    assert r.code == 0, r.err
    code, (done,) = lab.nvq.wait(job["id"], timeout=120)
    assert (code, done["state"], done["attempt"]) == (0, "completed", 2), done
    assert lab.logs(role, job["id"]) == "attempts 1 2\n"


@pytest.mark.parametrize("role", ROLES)
def test_pull_and_result_give_the_user_their_jobs_files(lab: Lab, role: str) -> None:
    job = lab.submit(role, "--gpus", "0", "--",
                     'echo made > out.txt; echo \'{"acc": 7}\' > "$NVQ_JOB_DIR/result.json"')
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    assert (code, done["state"]) == (0, "completed"), done
    r = lab.run(role, "job", "result", str(job["id"]), "--json")
    assert r.code == 0 and r.json()["result"] == {"acc": 7}, (r.out, r.err)
    dest = lab.cwd(role) / f"pulled-{job['id']}"
    r = lab.run(role, "job", "pull", str(job["id"]), "out.txt", "--to", str(dest))
    assert r.code == 0, r.err
    (got,) = dest.rglob("out.txt")
    assert got.read_text() == "made\n" and got.stat().st_uid == lab.uid(role)


def test_a_member_needs_only_nvq_and_nvq_home(lab: Lab) -> None:
    """The README's "Sharing a lab": from their own directory, with nothing of the
    queue's but NVQ_HOME, a member submits a relative script that runs on an sshd node
    from its snapshot, with the queue's [submit] settings."""
    lab.put("member", "train.py", "import os\nprint(os.environ.get('LAB_SECRET_KEY'))\n")
    env = {"PATH": os.environ["PATH"], "NVQ_HOME": str(lab.nvq.home), "LAB_SECRET_KEY": "k"}
    code, out, err = run_nvq(["job", "submit", "--gpus", "0", "--json", "--", "python3",
                              "train.py"], env=env, cwd=str(lab.cwd("member")), timeout=60,
                             user=_user(lab.user))
    assert code == 0, err
    job = json.loads(out)
    assert job["manifest_id"] and job["user"] == lab.user, job
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    assert (code, done["state"]) == (0, "completed") and done["node"] in ("n0", "n1"), done
    assert lab.logs("member", job["id"]) == "None\n"  # env_exclude held for them too
    member = lab.uid("member")
    theirs = [p for p in lab.nvq.home.rglob("*") if p.lstat().st_uid == member]
    assert theirs == []  # nothing written into the owner's home with their rights


@pytest.mark.parametrize("role", ROLES)
def test_a_snapshot_over_max_snapshot_is_one_line_and_nothing_is_submitted(
    lab: Lab, role: str
) -> None:
    big = lab.cwd(role) / "big"
    big.mkdir(exist_ok=True)
    (big / "data.bin").write_bytes(b"x" * (2 * 1024 * 1024))
    os.chown(big, lab.uid(role), -1)
    before = lab.nvq.json("job", "ls", "--all")["jobs"]
    try:
        r = lab.run(role, "job", "submit", "--gpus", "0", "--", "true")
    finally:
        shutil.rmtree(big)
    assert r.code == 2 and len(r.err.splitlines()) == 1, r.err
    # refused at the queue's max_snapshot (1MiB; by default it would have gone)
    assert r.err.startswith("nvq: the snapshot of ") and "is 2.0 MiB" in r.err, r.err
    assert "big/" in r.err, r.err
    assert lab.nvq.json("job", "ls", "--all")["jobs"] == before


@pytest.mark.skipif(podman_missing() is not None, reason=f"Podman: {podman_missing()}")
@pytest.mark.parametrize("role", ROLES)
def test_an_image_job_runs_its_snapshot_as_the_user(lab: Lab, role: str) -> None:
    lab.put(role, "data.txt", f"{role}'s data\n")
    r = lab.run(role, "job", "submit", "--json", "--image", IMAGE, "--gpus", "0", "--",
                "id -u; cat data.txt; echo 1 > /artifacts/ckpt")
    assert r.code == 0, r.err
    job = r.json()
    # the owner's queue host has no copy either (the nodes' store holds it); a
    # member is told that theirs is never carried (README, "Sharing a lab")
    assert r.err == ("" if role == "owner" else f"nvq: note: {MEMBER_IMAGE.format(ref=IMAGE)}\n")
    code, (done,) = lab.nvq.wait(job["id"], timeout=180)
    assert (code, done["state"]) == (0, "completed"), done
    assert lab.logs(role, job["id"]) == f"{lab.uid(role)}\n{role}'s data\n"
    node = next(n for n in lab.nodes if n.home and done["node"] == f"n{lab.nodes.index(n)}")
    (ckpt,) = Path(node.home).glob(f"jobs/*-{job['id']}-*/artifacts/ckpt")
    assert ckpt.stat().st_uid == lab.uid(role)


def _start(lab: Lab, role: str, args: list[str], stdio: tuple[int, int, int]) -> Started:
    """`nvq ARGS` left running as the role (the member through the CLI zygote: they
    cannot run this interpreter), on the given descriptors."""
    if role == "member":
        env = {**lab.nvq.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        return start_nvq(args, env=env, cwd=lab.cwd(role), user=_user(lab.user), stdio=stdio)
    who = pwd.getpwuid(os.getuid())
    me = User(who.pw_name, who.pw_uid, who.pw_gid, tuple(os.getgroups()), who.pw_dir)
    return start_nvq(args, env=lab.nvq.env, cwd=lab.cwd(role), user=me, stdio=stdio)


@pytest.mark.parametrize("role", ROLES)
def test_forward_reaches_the_users_server(lab: Lab, role: str) -> None:
    lab.put(role, "page.txt", f"{role}'s page\n")
    job = lab.submit(role, "--gpus", "0", "--",
                     "python3 -u -m http.server --bind 127.0.0.1 $NVQ_PORT")
    lab.nvq.wait_for(job["id"], lambda j: j["state"] == "running" and "Serving HTTP" in
                     lab.nvq.run("job", "logs", str(j["id"])).out, timeout=90)
    out_r, out_w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    call = _start(lab, role, ["job", "forward", str(job["id"]), "--json"], (null, out_w, null))
    os.close(out_w)
    os.close(null)
    try:
        with os.fdopen(out_r) as out:
            doc = first_json(out)
            with urllib.request.urlopen(doc["url"] + "page.txt", timeout=30) as resp:
                assert resp.read() == f"{role}'s page\n".encode()
            os.kill(call.pid, signal.SIGINT)
            assert call.wait() == 0
    finally:
        lab.nvq.ok("job", "cancel", str(job["id"]))


@pytest.mark.parametrize("role", ROLES)
def test_shell_is_a_terminal_on_the_node_as_the_user(lab: Lab, role: str) -> None:
    master, slave = pty.openpty()
    call = _start(lab, role, ["job", "shell", "--gpus", "0"], (slave, slave, slave))
    os.close(slave)
    seen = b""
    try:
        os.write(master, b"echo who''=$(id -u) at''=$NVQ_NODE; exit 3\n")
        while b"who=" not in seen or b"at=" not in seen:
            ready, _, _ = select.select([master], [], [], 60)
            assert ready, seen
            try:
                seen += os.read(master, 4096)
            except OSError:  # the terminal's other end closed: the call ended
                break
        assert call.wait() == 3, seen
    finally:
        os.close(master)
    assert f"who={lab.uid(role)} at=n".encode() in seen, seen


@needs_fuse
@pytest.mark.parametrize("role", ROLES)
def test_a_launch_that_fails_after_the_mount_leaves_no_mount(lab: Lab, role: str) -> None:
    # Attempt 1 leaves a checkpoint and fails; its --workdir goes away; requeued with
    # its node drained, attempt 2 gets its artifacts mounted on the other node, then
    # cannot start there.
    workdir = lab.cwd(role) / "gone"
    workdir.mkdir()
    os.chown(workdir, lab.uid(role), -1)
    job = lab.submit(role, "--gpus", "0", "--workdir", str(workdir), "--",
                     'echo 5 > "$NVQ_ARTIFACTS/step"; exit 3')
    _, (failed,) = lab.nvq.wait(job["id"], timeout=90)
    assert failed["state"] == "failed", failed
    lab.nvq.wait_for(job["id"], lambda j: any(
        s["attempt"] == 1 for s in j.get("artifact_syncs") or []), timeout=60)
    workdir.rmdir()
    first = failed["node"]
    lab.nvq.ok("queue", "drain", first)
    try:
        assert lab.run(role, "job", "requeue", str(job["id"])).code == 0
        _, (done,) = lab.nvq.wait(job["id"], timeout=90)
    finally:
        lab.nvq.ok("queue", "resume", first)
    assert (done["state"], done["attempt"]) == ("failed", 2) and done["node"] != first, done
    shown = lab.nvq.ok("job", "show", str(job["id"])).out
    assert "is not a directory" in shown, shown
    for node in lab.nodes:
        assert fuse_mounts(Path(node.home)) == []


def test_a_member_cannot_run_a_snapshot_someone_else_sent(lab: Lab) -> None:
    # The owner's job shows its snapshot's id to every member (metadata); naming it is
    # not having it: the code in it is the owner's.
    lab.put("owner", "secret.py", "print('the owner code')\n")
    theirs = lab.submit("owner", "--gpus", "0", "--", "python3", "secret.py")
    before = [j["id"] for j in lab.nvq.json("job", "ls", "--all")["jobs"]]
    r = lab.run("member", "job", "submit", "--gpus", "0", f"--from-cwd={lab.cwd('member')}",
                f"--from-snapshot={theirs['manifest_id']}", "--", "python3", "secret.py")
    assert r.code == 1 and len(r.err.splitlines()) == 1, (r.code, r.err)
    assert r.err == (f"nvq: the snapshot {theirs['manifest_id'][:12]} was not sent by "
                     f"{lab.user}: submit from your own directory (or pass --no-snapshot)\n")
    assert [j["id"] for j in lab.nvq.json("job", "ls", "--all")["jobs"]] == before
    lab.nvq.wait(theirs["id"], timeout=90)


@pytest.mark.parametrize("role", ROLES)
def test_exec_runs_beside_the_job_as_its_user(lab: Lab, role: str) -> None:
    # Only who and where: how exec's output is framed (pty or not) is another change's.
    job = lab.submit(role, "--gpus", "0", "--no-snapshot", "--", "sleep", "600")
    try:
        # started on its node (a pid), not only placed
        lab.nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["pid"], timeout=90)
        r = lab.run(role, "job", "exec", str(job["id"]), "--", "sh", "-c",
                    "echo who=$(id -u) job=$NVQ_JOB_ID; exit 4")
        assert r.code == 4, (r.out, r.err)
        assert f"who={lab.uid(role)} job={job['id']}" in r.out, r.out
    finally:
        lab.nvq.ok("job", "cancel", str(job["id"]))


def test_a_members_remote_submit_is_stored_through_the_daemon(lab: Lab) -> None:
    """A member's laptop with `[remote]` pointing at the queue host, logging in there as
    the member: its `queue receive-blobs` (run as them there) relays the snapshot into
    the daemon, which stores it as the queue's user, and the forwarded submit may name it."""
    command = nvq_command(lab.user)
    if command is None:
        pytest.skip(f"no Python {lab.user} may run this checkout's nvq with")
    # sshd without PAM refuses an account whose password is locked (useradd's "!")
    subprocess.run(["usermod", "-p", "*", lab.user], check=True, capture_output=True)
    node, who = lab.nodes[0], pwd.getpwnam(lab.user)
    laptop = Path(tempfile.mkdtemp(prefix="nvq-laptop-"))
    try:
        shutil.copy(node.identity, laptop / "key")
        (laptop / "config.toml").write_text(
            f'[remote]\nhost = "{node.host}"\nport = {node.port}\nuser = "{lab.user}"\n'
            f"identity = {json.dumps(str(laptop / 'key'))}\n"
            f"known_hosts = {json.dumps(str(node.known_hosts))}\n"
            f"nvq = {json.dumps(command)}\nhome = {json.dumps(str(lab.nvq.home))}\n")
        for path in (laptop, laptop / "key", laptop / "config.toml"):
            os.chown(path, who.pw_uid, who.pw_gid)
            path.chmod(0o700 if path.is_dir() else 0o600)
        lab.put("member", "hello.py", HELLO)
        lab.put("member", ".nvqignore", "ignored.txt\n")
        lab.put("member", "ignored.txt", "not taken\n")
        r = as_user(lab.user, lab.nvq, "job", "submit", "--gpus", "0", "--json", "--",
                    "python3", "hello.py", home=laptop)
        assert r.code == 0, r.err
        job = json.loads(r.out)
        assert job["manifest_id"] and job["user"] == lab.user, job
    finally:
        shutil.rmtree(laptop, ignore_errors=True)
    code, (done,) = lab.nvq.wait(job["id"], timeout=90)
    assert (code, done["state"]) == (0, "completed"), done
    uid = lab.uid("member")
    assert lab.logs("member", job["id"]) == f"in work {uid}, a copy of {uid}'s, ignored: False\n"
    theirs = [p for p in lab.nvq.home.rglob("*") if p.lstat().st_uid == uid]
    assert theirs == []  # nothing written into the owner's home with their rights


# A step after another: is its prerequisite's artifacts folder a mount (fetched on
# demand), whose files are they, and may the job write there?
USES = """d="$NVQ_INPUTS/{prep}"
python3 -c 'import os, sys; print("mounted" if os.path.ismount(sys.argv[1]) else "copied")' "$d"
stat -c %u "$d/data/train.txt"; cat "$d/data/train.txt"
(touch "$d/data/x" 2>/dev/null && echo writable || echo read-only)"""


@needs_fuse
@pytest.mark.parametrize("role", ROLES)
def test_prerequisite_artifacts_are_mounted_on_demand_as_the_users(lab: Lab, role: str) -> None:
    # A member's inputs were restored in full, as root's files, before their job began.
    prep = lab.submit(role, "--gpus", "0", "--no-snapshot", "--",
                      'mkdir -p "$NVQ_ARTIFACTS/data" && echo 1 2 3 > "$NVQ_ARTIFACTS/data/train.txt"')
    uses = lab.submit(role, "--gpus", "0", "--no-snapshot", "--after", str(prep["id"]), "--",
                      USES.format(prep=prep["id"]))
    code, (done,) = lab.nvq.wait(uses["id"], timeout=120)
    assert (code, done["state"]) == (0, "completed"), done
    assert lab.logs(role, uses["id"]) == f"mounted\n{lab.uid(role)}\n1 2 3\nread-only\n"
