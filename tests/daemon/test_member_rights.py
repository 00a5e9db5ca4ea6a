"""The permission table for reading and stopping, as a real second OS user: one test
per row, each asserting the refusal (one line, no traceback) and that nothing
happened. The owner (root, the queue's owner and so an admin) ran one job with a
secret in its environment, output, a result and an artifact; the member may see that
job's metadata only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nvq.home import Home
from tests.cluster import Nvq, Run
from tests.members import as_user, reachable_nvq, second_user

SECRET = "s3cret-wandb-key"
PLAIN = "plain-value-of-the-owner"
# What the job makes, none of it written in its command (which is metadata).
OUTPUT = "owner-output-42"
RESULT = {"acc": 9101}
ARTIFACT = "model.pt"
JOB = (
    "echo owner-output-$((40+2)); echo '{\"acc\": '$((9100+1))'}' > $NVQ_JOB_DIR/result.json;"
    " f=model; echo weights > $NVQ_ARTIFACTS/$f.pt"
)


@dataclass
class Lab:
    nvq: Nvq
    user: str
    job: dict[str, Any]  # the owner's finished job

    def member(self, *args: str) -> Run:
        return as_user(self.user, self.nvq, *args)

    def refused(self, *args: str, says: str = "belongs to root") -> Run:
        r = self.member(*args)
        assert r.code != 0, (args, r.out)
        if "--json" in args:  # one JSON error document on stdout
            assert says in r.json()["error"] and r.err == "", (args, r.out, r.err)
            return r
        assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, (args, r.err)
        assert says in r.err, (args, r.err)
        return r


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with second_user() as (user, group), reachable_nvq() as nvq:
        nvq.write_config(
            f'[queue]\nmembers_group = "{group}"\ninteractive_keep = "admins"\n'
        )
        job = nvq.submit(
            "--gpus", "0", "--env", f"WANDB_API_KEY={SECRET}", "--env", f"PLAIN_VAR={PLAIN}",
            "--", "sh", "-c", JOB,
        )
        code, _ = nvq.wait(job["id"])
        assert code == 0
        yield Lab(nvq, user, nvq.show(job["id"]))


def _no_secret(text: str) -> None:
    for value in (SECRET, PLAIN, OUTPUT, "9101", ARTIFACT):
        assert value not in text, value


def test_a_refused_stop_leaves_the_daemon_running(lab: Lab) -> None:
    pid = Home(lab.nvq.home).read_pid()
    assert pid is not None
    lab.refused("daemon", "stop", says="only a queue admin may stop the daemon")
    # the same daemon answers (a stopped one would be autostarted with another pid)
    lab.nvq.ok("queue", "status")
    assert Home(lab.nvq.home).read_pid() == pid
    os.kill(pid, 0)


def test_a_member_sees_another_users_job_as_squeue_would(lab: Lab) -> None:
    job_id = str(lab.job["id"])
    r = lab.member("job", "show", job_id, "--json")
    assert r.code == 0, r.err
    doc = r.json()
    for field in ("state", "node", "name", "user", "created_at", "started_at", "ended_at"):
        assert doc[field] == lab.job[field], field
    assert doc["env"] == {"WANDB_API_KEY": "***", "PLAIN_VAR": "***"}
    assert doc["result"] is None
    _no_secret(r.out)
    listed = lab.member("job", "ls", "--all", "--json")
    assert listed.code == 0 and job_id in listed.out
    _no_secret(listed.out)
    events = lab.member("queue", "events", "--json")
    assert events.code == 0
    _no_secret(events.out)
    # the owner sees it all
    assert lab.nvq.show(lab.job["id"])["env"]["PLAIN_VAR"] == PLAIN


@pytest.mark.parametrize(
    "args",
    [
        ["job", "logs", "{id}"],
        ["job", "result", "{id}"],
        ["job", "artifacts", "{id}"],
        ["job", "show", "{id}", "--logs", "5"],
        ["job", "show", "{id}", "--json", "--reveal"],
    ],
    ids=["logs", "result", "artifacts", "show-logs", "reveal"],
)
def test_what_a_job_holds_is_its_owners(lab: Lab, args: list[str]) -> None:
    r = lab.refused(*(a.format(id=lab.job["id"]) for a in args))
    _no_secret(r.out + r.err)


def test_a_member_cannot_pull_another_users_job(lab: Lab) -> None:
    pulls = lab.nvq.home / "pulls"
    before = sorted(pulls.iterdir()) if pulls.exists() else []
    lab.refused("job", "pull", str(lab.job["id"]), "--to", "/tmp/nvq-never")
    assert not Path("/tmp/nvq-never").exists()
    assert (sorted(pulls.iterdir()) if pulls.exists() else []) == before


def test_a_member_pulls_their_own_job(lab: Lab, tmp_path: Path) -> None:
    r = lab.member("job", "submit", "--gpus", "0", "--json", "--", "sh", "-c",
                   "echo mine > $NVQ_ARTIFACTS/own.txt")
    assert r.code == 0, r.err
    mine = r.json()["id"]
    assert lab.member("job", "wait", str(mine)).code == 0
    dest = Path("/tmp") / f"nvq-pull-{os.getpid()}"
    try:
        r = lab.member("job", "pull", str(mine), "--to", str(dest), "--json")
        assert r.code == 0, r.err
        assert (dest / "artifacts" / "own.txt").read_text() == "mine\n"
    finally:
        import shutil

        shutil.rmtree(dest, ignore_errors=True)
    assert lab.member("job", "logs", str(mine)).code == 0


def test_the_queue_owners_tools_refuse_a_member_in_one_line(lab: Lab) -> None:
    lab.refused("queue", "keeper", "install", says="only the queue's owner (root) may")
    assert not (lab.nvq.home / "keeper.json").exists()
    # `nvq web` as a member keeps its token in their own home; this one has none
    r = lab.refused("web", "--port", "0", says="cannot keep the page's token")
    assert not list(lab.nvq.home.glob("web.token*"))
    assert r.out == ""


def test_members_read_all_opens_logs_but_never_secrets(lab: Lab) -> None:
    nvq = lab.nvq
    config = (nvq.home / "config.toml").read_text()
    nvq.write_config(config.replace("[queue]\n", '[queue]\nmembers_read = "all"\n'))
    nvq.ok("daemon", "stop")
    nvq.ok("queue", "status")  # the owner starts it again, with the new config
    try:
        job_id = str(lab.job["id"])
        logs = lab.member("job", "logs", job_id)
        assert logs.code == 0 and OUTPUT in logs.out, logs.err
        doc = lab.member("job", "show", job_id, "--json").json()
        assert doc["env"] == {"WANDB_API_KEY": "***", "PLAIN_VAR": PLAIN}
        assert doc["result"] == RESULT
        r = lab.refused("job", "show", job_id, "--json", "--reveal")
        assert SECRET not in r.out
    finally:
        nvq.write_config(config)
        nvq.ok("daemon", "stop")
        nvq.ok("queue", "status")


def test_a_member_cannot_exec_into_or_forward_to_another_users_job(lab: Lab) -> None:
    job = lab.nvq.submit("--gpus", "0", "--no-snapshot", "--", "sleep", "600")
    lab.nvq.wait_for(job["id"], lambda j: j["state"] == "running" and j["pid"])
    try:
        lab.refused("job", "exec", str(job["id"]), "--", "true", says="belongs to root")
        lab.refused("job", "forward", str(job["id"]), says="belongs to root")
        assert lab.nvq.show(job["id"])["state"] == "running"
    finally:
        lab.nvq.ok("job", "cancel", str(job["id"]))


def test_only_admins_keep_a_session_past_its_idle_release_where_the_queue_says_so(
    lab: Lab,
) -> None:
    before = len(lab.nvq.json("job", "ls", "--all")["jobs"])
    lab.refused("job", "shell", "--no-idle-release", "--gpus", "0", "--", "true",
                says="only a queue admin may keep a session past its idle release")
    assert len(lab.nvq.json("job", "ls", "--all")["jobs"]) == before  # nothing queued
