"""A second OS user on the queue host, for the tests of what members may do: made with
useradd in a group of its own, removed afterwards; and the CLI run as that user."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import Nvq, Run, kill_processes_under, make_nvq


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
# (a Python under root's 0700 home) it starts as root, imports everything, and only
# then takes the user's uid, gids and groups: to the daemon (SO_PEERCRED) it is that
# user either way.
_DROP_THEN_RUN = """
import os, pwd, sys
import importlib, pkgutil
import nvq.cli, nvq.cli.commands, nvq.cli.main, nvq.client, nvq.config, nvq.remote
# The CLI loads only what a command needs, and finds a command by reading its
# package's sources: load every module of nvq and read the declarations now, as root.
import nvq, nvq_runner
for pkg in (nvq, nvq_runner):
    for found in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if not found.name.endswith("__main__"):
            importlib.import_module(found.name)
nvq.cli.commands.full_app()
nvq.cli.commands.command_info("job", "ls")
import encodings.idna, json, shlex, socket, email.utils
who = pwd.getpwnam(sys.argv[1])
os.setgroups(os.getgrouplist(who.pw_name, who.pw_gid))
os.setgid(who.pw_gid)
os.setuid(who.pw_uid)
os.environ["HOME"] = who.pw_dir
nvq.cli.main.main(sys.argv[2:])
"""


def _usable_by(user: str) -> bool:
    probe = ["runuser", "-u", user, "--", sys.executable, "-c", "pass"]
    return subprocess.run(probe, capture_output=True, cwd="/tmp").returncode == 0


def as_user(user: str, nvq: Nvq, *args: str) -> Run:
    if _usable_by(user):
        argv = ["runuser", "-u", user, "--", sys.executable, "-m", "nvq", *args]
    else:
        argv = [sys.executable, "-c", _DROP_THEN_RUN, user, *args]
    env = {**nvq.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run(argv, env=env, cwd="/tmp", capture_output=True, text=True, timeout=60)
    return Run(p.returncode, p.stdout, p.stderr)
