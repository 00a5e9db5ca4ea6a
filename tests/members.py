"""A second OS user on the queue host, for the tests of what members may do: made with
useradd in a group of its own, removed afterwards; and the CLI run as that user."""

from __future__ import annotations

import functools
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import Nvq, Run, kill_processes_under, make_nvq
from tests.harness.cli_calls import User, run_nvq


def _can_add_users() -> str | None:
    if os.geteuid() != 0:
        return "creating a second OS user needs root"
    for tool in ("useradd", "groupadd", "userdel", "groupdel", "runuser", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@contextmanager
def second_user() -> Iterator[tuple[str, str]]:
    """(user, group): a fresh user in a fresh group, removed afterwards."""
    why = _can_add_users()
    if why is not None:
        pytest.skip(f"no second OS user: {why}")
    tag = secrets.token_hex(3)
    user, group = f"nvqm{tag}", f"nvqlab{tag}"
    made = subprocess.run(["groupadd", group], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"no second OS user: groupadd failed: {made.stderr.strip()}")
    made = subprocess.run(
        ["useradd", "-M", "-N", "-G", group, user], capture_output=True, text=True
    )
    if made.returncode != 0:
        subprocess.run(["groupdel", group], capture_output=True)
        pytest.skip(f"no second OS user: useradd failed: {made.stderr.strip()}")
    try:
        yield user, group
    finally:
        subprocess.run(["pkill", "-u", user], capture_output=True)
        workdir = _WORKDIRS.pop(user, None)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)


@contextmanager
def reachable_nvq() -> Iterator[Nvq]:
    """A queue whose home others can reach (pytest's own tmp is root's alone)."""
    top = Path(tempfile.mkdtemp(prefix="nvq-members-", dir="/tmp"))
    top.chmod(0o755)
    q = make_nvq(top)
    try:
        yield q
    finally:
        q.shutdown()
        kill_processes_under(top)
        shutil.rmtree(top, ignore_errors=True)


# The CLI as another user. Where that user may run this Python, through runuser; else
# (a Python under root's 0700 home) forked as root from a zygote that imported every
# module of nvq (tests.harness.cli_calls), the child taking the user's uid, gids and
# groups before it runs nvq's main: to the daemon (SO_PEERCRED) it is that user either way.


def _user(name: str) -> User:
    who = pwd.getpwnam(name)
    groups = tuple(os.getgrouplist(who.pw_name, who.pw_gid))
    return User(name, who.pw_uid, who.pw_gid, groups, who.pw_dir)


@functools.cache
def _usable_by(user: str) -> bool:
    probe = ["runuser", "-u", user, "--", sys.executable, "-c", "pass"]
    return subprocess.run(probe, capture_output=True, cwd="/tmp").returncode == 0


_WORKDIRS: dict[str, str] = {}  # user → the directory `as_user` runs the CLI in


def _workdir(user: str) -> str:
    """An empty directory of the user's own to run the CLI in (the users have no home):
    a submit or `job shell` snapshots its working directory, and /tmp on a machine
    running the suite holds fresh clones with their venvs, which took a member's
    refused `job shell` past its 60 s under load, snapshotting before it asked."""
    if user not in _WORKDIRS:
        who = pwd.getpwnam(user)
        path = tempfile.mkdtemp(prefix=f"nvq-{user}-")
        os.chown(path, who.pw_uid, who.pw_gid)
        _WORKDIRS[user] = path
    return _WORKDIRS[user]


def nvq_command(user: str) -> str | None:
    """How `user` runs this checkout's nvq from a shell of their own (what `[remote]
    nvq` names when they log in over SSH): this Python where they may run it, else the
    system's Python of the same version with this venv's packages on its path; None
    where neither is open to them."""
    repo = Path(__file__).resolve().parents[1]
    if _usable_by(user):
        return f"env PYTHONPATH={repo} {sys.executable} -m nvq"
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}",
                          path="/usr/bin:/usr/local/bin")
    packages = sysconfig.get_paths()["purelib"]
    if system is None:
        return None
    line = f"env PYTHONPATH={repo}:{packages} {system} -m nvq"
    probe = ["runuser", "-u", user, "--", "sh", "-c", line + " --help"]
    if subprocess.run(probe, capture_output=True, cwd="/tmp").returncode != 0:
        return None
    return line


def as_user(user: str, nvq: Nvq, *args: str, home: Path | None = None) -> Run:
    """`nvq ARGS` as `user`, against `nvq`'s queue (or the NVQ_HOME `home`)."""
    env = {**nvq.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    if home is not None:
        env["NVQ_HOME"] = str(home)
    cwd = _workdir(user)
    if _usable_by(user):
        argv = ["runuser", "-u", user, "--", sys.executable, "-m", "nvq", *args]
        p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
        return Run(p.returncode, p.stdout, p.stderr)
    return Run(*run_nvq(list(args), env=env, cwd=cwd, timeout=60, user=_user(user)))
