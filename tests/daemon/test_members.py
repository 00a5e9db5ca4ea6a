"""A second OS user on the queue host: shut out unless `[queue] members_group` lets
them in; once in, they manage their own jobs (which run as them) and nothing of the
owner's or the queue's."""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Iterator

import pytest

from nvq.home import Home
from tests.cluster import Nvq
from tests.members import as_user, reachable_nvq, second_user


@pytest.fixture
def member() -> Iterator[tuple[str, str]]:
    with second_user() as made:
        yield made


@pytest.fixture
def shared_nvq() -> Iterator[Nvq]:
    with reachable_nvq() as q:
        yield q


def test_without_a_members_group_others_cannot_connect(
    shared_nvq: Nvq, member: tuple[str, str]
) -> None:
    user, _group = member
    shared_nvq.ok("queue", "status")
    r = as_user(user, shared_nvq, "job", "ls")
    assert r.code != 0 and "Traceback" not in r.err
    assert r.err.startswith("nvq: permission denied on the queue's socket "), r.err


def test_a_member_manages_their_own_jobs_only(shared_nvq: Nvq, member: tuple[str, str]) -> None:
    user, group = member
    nvq = shared_nvq
    nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
    theirs = nvq.submit("--gpus", "0", "--", "sleep", "3600")  # outlives a slow run

    # Their own job: submitted, noted, run as them.
    r = as_user(user, nvq, "job", "submit", "--gpus", "0", "--json", "--", "id", "-u")
    assert r.code == 0, r.err
    mine = r.json()
    assert mine["user"] == user
    assert as_user(user, nvq, "job", "note", str(mine["id"]), "mine").code == 0
    done = as_user(user, nvq, "job", "wait", str(mine["id"]), "--json")
    assert done.code == 0, done.out + done.err
    uid = subprocess.run(["id", "-u", user], capture_output=True, text=True).stdout.strip()
    assert as_user(user, nvq, "job", "logs", str(mine["id"])).out.strip() == uid
    sleeper = as_user(user, nvq, "job", "submit", "--gpus", "0", "--json", "--", "sleep", "60").json()
    assert as_user(user, nvq, "job", "cancel", str(sleeper["id"])).code == 0

    # The owner's job: readable, not changeable.
    assert as_user(user, nvq, "job", "show", str(theirs["id"])).code == 0
    for args in (
        ["job", "note", str(theirs["id"]), "ssh-ed25519 AAAA"],
        ["job", "cancel", str(theirs["id"])],
        ["job", "result", str(theirs["id"]), "--set", "{}"],
    ):
        r = as_user(user, nvq, *args)
        assert r.code != 0 and "belongs to root" in r.err, (args, r.err)
    assert nvq.show(theirs["id"])["state"] == "running"
    assert nvq.show(theirs["id"])["note"] == ""

    # The queue's own operations: an admin's.
    for args in (
        ["queue", "drain", "local"],
        ["queue", "ack", "--all"],
        ["queue", "backup"],
        ["daemon", "stop"],
    ):
        r = as_user(user, nvq, *args)
        assert r.code != 0 and "only a queue admin may" in r.err, (args, r.out, r.err)
    assert nvq.ok("queue", "status")
    nvq.ok("job", "cancel", str(theirs["id"]))


def test_with_the_daemon_down_a_member_hears_who_can_start_it(
    shared_nvq: Nvq, member: tuple[str, str]
) -> None:
    user, group = member
    nvq = shared_nvq
    nvq.write_config(f'[queue]\nmembers_group = "{group}"\n')
    nvq.ok("queue", "status")
    assert as_user(user, nvq, "job", "ls").code == 0
    nvq.ok("daemon", "stop")
    owner = pwd.getpwuid(os.geteuid()).pw_name
    said = f"the queue at {nvq.home} is not running; only its owner {owner} can start it"
    r = as_user(user, nvq, "job", "ls")
    assert r.code == 1 and r.out == "", (r.out, r.err)
    assert len(r.err.splitlines()) == 1 and said in r.err, r.err
    r = as_user(user, nvq, "job", "submit", "--gpus", "0", "--no-snapshot", "--json", "--", "true")
    assert r.code == 1 and said in r.json()["error"] and r.err == "", (r.out, r.err)
    assert Home(nvq.home).read_pid() is None  # nothing was started as the member
    nvq.ok("queue", "status")  # the owner's command starts it
