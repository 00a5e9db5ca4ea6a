"""A second OS user on the queue host, for the tests of what members may do: made with
useradd in a group of its own, removed afterwards; and the CLI run as that user."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import secrets
import select
import shutil
import signal
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
        _close_forkers(user)
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
# (a Python under root's 0700 home) a root process imports everything once, and each
# call is a fork of it that takes the user's uid, gids and groups and runs nvq's main:
# to the daemon (SO_PEERCRED) it is that user either way. Importing every module costs
# seconds of CPU, which a fresh process per call paid again (a member test made a dozen
# calls); a fork pays nothing.
_PRELOAD_THEN_FORK = """
import json, os, pwd, sys, traceback
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
import encodings.idna, shlex, socket, email.utils
who = pwd.getpwnam(sys.argv[1])
groups = os.getgrouplist(who.pw_name, who.pw_gid)


def call(args, out, err):
    # the output files are opened as root, before the uid changes
    fds = [os.open(os.devnull, os.O_RDONLY)]
    fds += [os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for f in (out, err)]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.setgroups(groups)
    os.setgid(who.pw_gid)
    os.setuid(who.pw_uid)
    os.environ["HOME"] = who.pw_dir
    try:
        nvq.cli.main.main(args)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
    return 1


print("ready", flush=True)
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = call(req["args"], req["out"], req["err"])
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""

CALL_TIMEOUT = 60.0
PRELOAD_TIMEOUT = 180.0  # every module of nvq imported on a loaded machine


class _Forker:
    """The root process that forks one member call after another (see above)."""

    def __init__(self, user: str, env: dict[str, str]) -> None:
        self.user = user
        self.dir = Path(tempfile.mkdtemp(prefix="nvq-member-calls-"))
        self.calls = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PRELOAD_THEN_FORK, user],
            env=env,
            cwd="/tmp",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its forks with it, when a call hangs
        )
        ready = self._line(PRELOAD_TIMEOUT)
        assert ready == "ready", f"the member CLI did not load: {ready!r}"

    def _line(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not readable:
            self.close()
            raise subprocess.TimeoutExpired(["nvq (as " + self.user + ")"], timeout)
        return self.proc.stdout.readline().strip()

    def run(self, args: tuple[str, ...]) -> Run:
        assert self.proc.stdin is not None
        self.calls += 1
        out, err = self.dir / f"{self.calls}.out", self.dir / f"{self.calls}.err"
        request = {"args": list(args), "out": str(out), "err": str(err)}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        code = self._line(CALL_TIMEOUT)
        assert code, "the member CLI's forker died"
        return Run(int(code), out.read_text(), err.read_text())

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_forkers: dict[tuple[str, tuple[tuple[str, str], ...]], _Forker] = {}


def _close_forkers(user: str | None = None) -> None:
    for key in [k for k in _forkers if user is None or k[0] == user]:
        _forkers.pop(key).close()


atexit.register(_close_forkers)


@functools.cache
def _usable_by(user: str) -> bool:
    probe = ["runuser", "-u", user, "--", sys.executable, "-c", "pass"]
    return subprocess.run(probe, capture_output=True, cwd="/tmp").returncode == 0


def as_user(user: str, nvq: Nvq, *args: str) -> Run:
    env = {**nvq.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    if _usable_by(user):
        argv = ["runuser", "-u", user, "--", sys.executable, "-m", "nvq", *args]
        p = subprocess.run(argv, env=env, cwd="/tmp", capture_output=True, text=True, timeout=60)
        return Run(p.returncode, p.stdout, p.stderr)
    key = (user, tuple(sorted(env.items())))
    forker = _forkers.get(key)
    if forker is None or forker.proc.poll() is not None:
        forker = _forkers[key] = _Forker(user, env)
    return forker.run(args)
